/* The bf16 precision contract, a setting of the whole process
 * (include/nectar.h: nc_set_bf16_contract): the command line takes it from
 * NECTAR_BF16, a library user says it. The next model opened tunes its
 * kernels for the new contract (cpu_tune_once). */
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_wisdom.h"
#include "nectar.h"

NC_API nc_status nc_set_bf16_contract(const char *contract, nc_error *err) {
    int before = cpu_bf16_mode();
    nc_status st = cpu_select_bf16(contract, err);
    if (st != NC_OK) { /* cpu_select_bf16 may have set the mode before it refused a kernel */
        nc_error ignored;
        cpu_select_bf16(before == CPU_BF16_MODE_FAST  ? "fast"
                        : before == CPU_BF16_MODE_OFF ? "off"
                                                      : "accurate",
                        &ignored);
        return st;
    }
    cpu_tune_once_again();
    return NC_OK;
}
