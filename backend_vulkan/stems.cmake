# Kernels the op table names by stem (core/op_table.c, trr_op_desc.kernel): kernels/vulkan/<stem>.comp, one
# SPIR-V per entry point (the op's name, given as -DENTRY_<name>) and dtype, named <stem>_<entry>_<dtype>.spv,
# which is the name the generic paths (vk_norm.c) look up. TRR_VK_STEM_<stem> lists a stem's entries.
set(TRR_VK_STEMS norm)
set(TRR_VK_STEM_norm rms_norm layer_norm)
set(_trr_stem_dtype_f32 "")
set(_trr_stem_dtype_f16 ",X_F16,Z_F16")
set(_trr_stem_dtype_bf16 ",X_BF16,Z_BF16")
foreach(stem IN LISTS TRR_VK_STEMS)
  foreach(entry IN LISTS TRR_VK_STEM_${stem})
    foreach(dt f32 f16 bf16)
      list(APPEND TRR_VK_VARIANTS "${stem}_${entry}_${dt}|${stem}.comp|ENTRY_${entry}${_trr_stem_dtype_${dt}}")
    endforeach()
  endforeach()
endforeach()
