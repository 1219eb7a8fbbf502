/* Loads the OpenCL ICD loader at run time, so one build runs (and says why not) where no OpenCL is installed. */
#include "opencl.h"

#include "dynlib.h"

#include <stdio.h>
#include <string.h>

trr_cl_api trr_cl;

static void *cl_library;

trr_status trr_cl_load(char *reason, size_t reason_cap) {
    if (cl_library) return TRR_OK;
    static const char *const names[] = {"libOpenCL.so.1", "libOpenCL.so", NULL};
    void *lib = trr_dynlib_open(names, reason, reason_cap);
    if (!lib) return TRR_ERR_UNAVAILABLE;
    trr_cl_api api;
    memset(&api, 0, sizeof api);
    /* Function pointers cannot be assigned from void * in ISO C; copying the bytes is the portable spelling. */
#define TRR_CL_LOOKUP(ret, name, params)                                                                       \
    {                                                                                                          \
        void *sym = trr_dynlib_sym(lib, "cl" #name, reason, reason_cap);                                       \
        if (!sym) return TRR_ERR_UNAVAILABLE;                                                                  \
        memcpy(&api.name, &sym, sizeof sym);                                                                   \
    }
    TRR_CL_FUNCTIONS(TRR_CL_LOOKUP)
#undef TRR_CL_LOOKUP
    trr_cl = api;
    cl_library = lib;
    return TRR_OK;
}

const char *trr_cl_error_name(cl_int err) {
    switch (err) {
#define N(code)                                                                                                \
    case code: return #code;
        N(CL_SUCCESS)
        N(CL_DEVICE_NOT_FOUND)
        N(CL_DEVICE_NOT_AVAILABLE)
        N(CL_COMPILER_NOT_AVAILABLE)
        N(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        N(CL_OUT_OF_RESOURCES)
        N(CL_OUT_OF_HOST_MEMORY)
        N(CL_PROFILING_INFO_NOT_AVAILABLE)
        N(CL_MEM_COPY_OVERLAP)
        N(CL_IMAGE_FORMAT_MISMATCH)
        N(CL_IMAGE_FORMAT_NOT_SUPPORTED)
        N(CL_BUILD_PROGRAM_FAILURE)
        N(CL_MAP_FAILURE)
        N(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        N(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        N(CL_COMPILE_PROGRAM_FAILURE)
        N(CL_LINKER_NOT_AVAILABLE)
        N(CL_LINK_PROGRAM_FAILURE)
        N(CL_DEVICE_PARTITION_FAILED)
        N(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
        N(CL_INVALID_VALUE)
        N(CL_INVALID_DEVICE_TYPE)
        N(CL_INVALID_PLATFORM)
        N(CL_INVALID_DEVICE)
        N(CL_INVALID_CONTEXT)
        N(CL_INVALID_QUEUE_PROPERTIES)
        N(CL_INVALID_COMMAND_QUEUE)
        N(CL_INVALID_HOST_PTR)
        N(CL_INVALID_MEM_OBJECT)
        N(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
        N(CL_INVALID_IMAGE_SIZE)
        N(CL_INVALID_SAMPLER)
        N(CL_INVALID_BINARY)
        N(CL_INVALID_BUILD_OPTIONS)
        N(CL_INVALID_PROGRAM)
        N(CL_INVALID_PROGRAM_EXECUTABLE)
        N(CL_INVALID_KERNEL_NAME)
        N(CL_INVALID_KERNEL_DEFINITION)
        N(CL_INVALID_KERNEL)
        N(CL_INVALID_ARG_INDEX)
        N(CL_INVALID_ARG_VALUE)
        N(CL_INVALID_ARG_SIZE)
        N(CL_INVALID_KERNEL_ARGS)
        N(CL_INVALID_WORK_DIMENSION)
        N(CL_INVALID_WORK_GROUP_SIZE)
        N(CL_INVALID_WORK_ITEM_SIZE)
        N(CL_INVALID_GLOBAL_OFFSET)
        N(CL_INVALID_EVENT_WAIT_LIST)
        N(CL_INVALID_EVENT)
        N(CL_INVALID_OPERATION)
        N(CL_INVALID_GL_OBJECT)
        N(CL_INVALID_BUFFER_SIZE)
        N(CL_INVALID_MIP_LEVEL)
        N(CL_INVALID_GLOBAL_WORK_SIZE)
        N(CL_INVALID_PROPERTY)
        N(CL_INVALID_IMAGE_DESCRIPTOR)
        N(CL_INVALID_COMPILER_OPTIONS)
        N(CL_INVALID_LINKER_OPTIONS)
        N(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef N
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: break;
    }
    static _Thread_local char text[32];
    snprintf(text, sizeof text, "CL error %d", (int)err);
    return text;
}

trr_status trr_cl_fail(trr_context *ctx, const char *function, cl_int err) {
    trr_status status = TRR_ERR_DEVICE;
    if (err == CL_OUT_OF_HOST_MEMORY || err == CL_MEM_OBJECT_ALLOCATION_FAILURE) status = TRR_ERR_OUT_OF_MEMORY;
    return trr_error(ctx, status, "%s: %s", function, trr_cl_error_name(err));
}
