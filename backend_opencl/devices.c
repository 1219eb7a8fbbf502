/* Every device of every platform in one flat list, so "opencl:N" means the same device for the whole process. */
#include "opencl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 64

static trr_cl_device_ref devices[MAX_DEVICES];
static int device_count;

#ifndef CL_DEVICE_WARP_SIZE_NV
#define CL_DEVICE_WARP_SIZE_NV 0x4003
#endif
/* cl_khr_device_uuid and cl_khr_pci_bus_info (cl_ext.h may predate them), cl_nv_device_attribute_query */
#ifndef CL_DEVICE_UUID_KHR
#define CL_DEVICE_UUID_KHR 0x106A
#endif
#ifndef CL_DEVICE_PCI_BUS_INFO_KHR
#define CL_DEVICE_PCI_BUS_INFO_KHR 0x410F
#endif
#define TRR_CL_PCI_BUS_ID_NV 0x4008
#define TRR_CL_PCI_SLOT_ID_NV 0x4009
#define TRR_CL_PCI_DOMAIN_ID_NV 0x400A
#ifndef CL_DEVICE_WAVEFRONT_WIDTH_AMD
#define CL_DEVICE_WAVEFRONT_WIDTH_AMD 0x4043
#endif

trr_status trr_cl_probe(int *out_device_count, char *reason, size_t reason_cap) {
    trr_status status = trr_cl_load(reason, reason_cap);
    if (status != TRR_OK) return status;
    cl_uint n_platforms = 0;
    cl_int err = trr_cl.GetPlatformIDs(0, NULL, &n_platforms);
    /* The ICD loader answers CL_PLATFORM_NOT_FOUND_KHR when no vendor driver is registered. */
    if (err != CL_SUCCESS || n_platforms == 0) {
        snprintf(reason, reason_cap, "libOpenCL loaded but no OpenCL platform is installed (clGetPlatformIDs: %s)",
                 err == CL_SUCCESS ? "0 platforms" : trr_cl_error_name(err));
        return TRR_ERR_UNAVAILABLE;
    }
    cl_platform_id platforms[16];
    if (n_platforms > 16) n_platforms = 16;
    err = trr_cl.GetPlatformIDs(n_platforms, platforms, NULL);
    if (err != CL_SUCCESS) {
        snprintf(reason, reason_cap, "clGetPlatformIDs: %s", trr_cl_error_name(err));
        return TRR_ERR_UNAVAILABLE;
    }
    device_count = 0;
    for (cl_uint p = 0; p < n_platforms; p++) {
        cl_uint n = 0;
        /* A platform without devices answers CL_DEVICE_NOT_FOUND; that is not an error for the others. */
        if (trr_cl.GetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &n) != CL_SUCCESS || n == 0) continue;
        cl_device_id ids[MAX_DEVICES];
        if (n > (cl_uint)(MAX_DEVICES - device_count)) n = (cl_uint)(MAX_DEVICES - device_count);
        if (n == 0 || trr_cl.GetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, n, ids, NULL) != CL_SUCCESS) continue;
        for (cl_uint d = 0; d < n; d++) {
            devices[device_count].platform = platforms[p];
            devices[device_count].device = ids[d];
            device_count++;
        }
    }
    if (device_count == 0) {
        snprintf(reason, reason_cap, "%u OpenCL platform(s) found but none has a device", (unsigned)n_platforms);
        return TRR_ERR_UNAVAILABLE;
    }
    *out_device_count = device_count;
    return TRR_OK;
}

const trr_cl_device_ref *trr_cl_device_ref_get(int index) {
    if (index < 0 || index >= device_count) return NULL;
    return &devices[index];
}

static void info_string(cl_device_id dev, cl_device_info what, char *out, size_t cap) {
    size_t size = 0;
    out[0] = '\0';
    if (trr_cl.GetDeviceInfo(dev, what, cap, out, &size) != CL_SUCCESS) {
        /* Too long for out (extension lists): read it whole and keep the prefix. */
        char *all = NULL;
        if (trr_cl.GetDeviceInfo(dev, what, 0, NULL, &size) == CL_SUCCESS && size > 0 && (all = malloc(size))) {
            if (trr_cl.GetDeviceInfo(dev, what, size, all, NULL) == CL_SUCCESS) snprintf(out, cap, "%s", all);
            free(all);
        }
    }
    out[cap - 1] = '\0';
    /* Some drivers pad names with spaces. */
    size_t len = strlen(out);
    while (len > 0 && out[len - 1] == ' ') out[--len] = '\0';
}

static int has_extension(cl_device_id dev, const char *name) {
    size_t size = 0;
    if (trr_cl.GetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &size) != CL_SUCCESS || size == 0) return 0;
    char *all = malloc(size + 1);
    if (!all) return 0;
    int found = 0;
    if (trr_cl.GetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, size, all, NULL) == CL_SUCCESS) {
        all[size] = '\0';
        size_t n = strlen(name);
        for (const char *p = all; (p = strstr(p, name)) != NULL; p += n) {
            if ((p == all || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) {
                found = 1;
                break;
            }
        }
    }
    free(all);
    return found;
}

/* The UUID when cl_khr_device_uuid is listed; the PCI address from cl_khr_pci_bus_info, else NVIDIA's
 * attribute query (bus and slot; slot = device << 3 | function). Left empty otherwise. */
static void device_identity(cl_device_id dev, trr_device_info *info) {
    unsigned char u[16];
    if (has_extension(dev, "cl_khr_device_uuid") &&
        trr_cl.GetDeviceInfo(dev, CL_DEVICE_UUID_KHR, sizeof u, u, NULL) == CL_SUCCESS) {
        int o = 0;
        for (int i = 0; i < 16; i++) {
            if (i == 4 || i == 6 || i == 8 || i == 10) info->uuid[o++] = '-';
            o += snprintf(info->uuid + o, 3, "%02x", u[i]);
        }
    }
    struct {
        cl_uint domain, bus, device, function;
    } pci;
    cl_uint bus = 0, slot = 0, domain = 0;
    if (has_extension(dev, "cl_khr_pci_bus_info") &&
        trr_cl.GetDeviceInfo(dev, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof pci, &pci, NULL) == CL_SUCCESS) {
        snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%04x:%02x:%02x.%x", pci.domain & 0xffffu,
                 pci.bus & 0xffu, pci.device & 0x1fu, pci.function & 0x7u);
    } else if (has_extension(dev, "cl_nv_device_attribute_query") &&
               trr_cl.GetDeviceInfo(dev, TRR_CL_PCI_BUS_ID_NV, sizeof bus, &bus, NULL) == CL_SUCCESS &&
               trr_cl.GetDeviceInfo(dev, TRR_CL_PCI_SLOT_ID_NV, sizeof slot, &slot, NULL) == CL_SUCCESS) {
        /* older drivers lack the domain query: domain 0 is what they mean */
        if (trr_cl.GetDeviceInfo(dev, TRR_CL_PCI_DOMAIN_ID_NV, sizeof domain, &domain, NULL) != CL_SUCCESS) domain = 0;
        snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%04x:%02x:%02x.%x", domain & 0xffffu, bus & 0xffu,
                 (slot >> 3) & 0x1fu, slot & 0x7u);
    }
}

trr_status trr_cl_device_info(int index, trr_device_info *out_info) {
    const trr_cl_device_ref *ref = trr_cl_device_ref_get(index);
    if (!ref) return trr_error(NULL, TRR_ERR_NO_DEVICE, "opencl:%d: no such device (%d found)", index, device_count);
    cl_device_id dev = ref->device;
    trr_device_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.backend, sizeof info.backend, "opencl");
    info.index = index;
    snprintf(info.spec, sizeof info.spec, "opencl:%d", index);
    info_string(dev, CL_DEVICE_NAME, info.name, sizeof info.name);
    info_string(dev, CL_DEVICE_VENDOR, info.vendor, sizeof info.vendor);
    info_string(dev, CL_DRIVER_VERSION, info.driver, sizeof info.driver);

    cl_device_type type = 0;
    cl_ulong global = 0, local = 0;
    size_t max_wg = 0;
    cl_uint units = 0;
    cl_int err = trr_cl.GetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    if (err == CL_SUCCESS) err = trr_cl.GetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    if (err == CL_SUCCESS) err = trr_cl.GetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
    if (err == CL_SUCCESS) err = trr_cl.GetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_wg, &max_wg, NULL);
    if (err == CL_SUCCESS) err = trr_cl.GetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    if (err != CL_SUCCESS) return trr_cl_fail(NULL, "clGetDeviceInfo", err);
    info.is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
    info.global_memory = global;
    info.shared_memory_per_block = local;
    info.max_threads_per_block = (int)max_wg;
    info.compute_units = (int)units;
    info.native_f16 = has_extension(dev, "cl_khr_fp16");

    /* The SIMD width is only queryable through vendor extensions in OpenCL 1.2. */
    cl_uint width = 0;
    info.subgroup_width = 1;
    if (strstr(info.vendor, "NVIDIA") &&
        trr_cl.GetDeviceInfo(dev, CL_DEVICE_WARP_SIZE_NV, sizeof width, &width, NULL) == CL_SUCCESS && width > 0)
        info.subgroup_width = (int)width;
    else if (has_extension(dev, "cl_amd_device_attribute_query") &&
             trr_cl.GetDeviceInfo(dev, CL_DEVICE_WAVEFRONT_WIDTH_AMD, sizeof width, &width, NULL) == CL_SUCCESS &&
             width > 0)
        info.subgroup_width = (int)width;

    device_identity(dev, &info);

    /* tensor cores only where the compile-and-run probe passed (mma_probe.c), whatever the device is called */
    trr_cl_mma mma;
    trr_cl_mma_probe(index, info.name, info.driver, &mma);
    info.matrix_units = mma.ok;

    char version[64];
    info_string(dev, CL_DEVICE_OPENCL_C_VERSION, version, sizeof version);
    const char *tensor = !mma.ok        ? "tensor cores unavailable: "
                         : mma.wgmma    ? "tensor cores: mma.sync, cp.async, wgmma via inline PTX"
                         : mma.cp_async ? "tensor cores: mma.sync, cp.async via inline PTX"
                                        : "tensor cores: mma.sync via inline PTX";
    /* the reason's summary (up to its first ": "); the whole of it comes with a refused mma config */
    const char *colon = mma.ok ? NULL : strstr(mma.reason, ": ");
    int why = mma.ok ? 0 : colon ? (int)(colon - mma.reason) : (int)strlen(mma.reason);
    snprintf(info.capabilities, sizeof info.capabilities, "%s; %s; %u CUs; %llu KiB local; wg %zu; simd %d; %s%s; %s%.*s",
             info.is_gpu ? "GPU" : "non-GPU", version, (unsigned)units, (unsigned long long)(local / 1024), max_wg,
             info.subgroup_width, info.native_f16 ? "fp16 arithmetic" : "fp16 storage only",
             has_extension(dev, "cl_khr_fp64") ? "; fp64" : "", tensor, why, mma.reason);
    *out_info = info;
    return TRR_OK;
}
