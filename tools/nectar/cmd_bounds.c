/* `nectar bounds`: placeholder until its implementation lands. */
#include "commands.h"

int cmd_bounds(int argc, char **argv) {
    (void)argc;
    return cli_failf("%s: not implemented yet", argv[0]);
}
