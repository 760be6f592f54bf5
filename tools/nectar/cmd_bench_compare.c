/* `nectar bench compare`: placeholder until its implementation lands. */
#include "commands.h"

int cmd_bench_compare(int argc, char **argv) {
    (void)argc;
    return cli_failf("%s: not implemented yet", argv[0]);
}
