/* `nectar mil check`: placeholder until its implementation lands. */
#include "commands.h"

int cmd_mil_check(int argc, char **argv) {
    (void)argc;
    return cli_failf("%s: not implemented yet", argv[0]);
}
