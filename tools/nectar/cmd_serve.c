/* `nectar serve`: placeholder until its implementation lands. */
#include "commands.h"

int cmd_serve(int argc, char **argv) {
    (void)argc;
    return cli_failf("%s: not implemented yet", argv[0]);
}
