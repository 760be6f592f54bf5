/* The bf16 precision contract, a setting of the whole process
 * (include/nectar.h: nc_set_bf16_contract): the command line takes it from
 * NECTAR_BF16, a library user says it. The next model opened tunes its
 * kernels for the new contract (cpu_tune_once). */
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_wisdom.h"
#include "nectar.h"

NC_API nc_status nc_set_bf16_contract(const char *contract, nc_error *err) {
    NC_TRY(cpu_select_bf16(contract, err));
    cpu_tune_once_again();
    return NC_OK;
}
