/* rgb_to_grey: planar u8 [3,H,W] with a plane stride and a row stride; z is u8 (rounded, clamped) or f32. */
__kernel void rgb_to_grey(__global const uchar *x, long xoff, int plane, int xs, __global z_t *z, long zoff, int zs,
                   int rows, int cols) {
    int c = (int)get_global_id(0), r = (int)get_global_id(1);
    if (c >= cols || r >= rows) return;
    long i = xoff + (long)r * xs + c;
    float R = convert_float(x[i]), G = convert_float(x[i + plane]), B = convert_float(x[i + 2L * plane]);
    float v = 0.2989f * R + 0.5870f * G + 0.1140f * B;
    STORE_Z(v, z, zoff + (long)r * zs + c);
}
