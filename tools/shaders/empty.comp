#version 450
// trr_vk_dispatch_probe's dispatch without work or resources: what a dispatch costs on the device by itself.
layout(local_size_x = 64) in;
void main() {}
