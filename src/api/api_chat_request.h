/* Inside the public API: what an nc_chat_request holds, for the sequences
 * that sample under its constraint (api_generate.c). */
#ifndef NC_API_CHAT_REQUEST_H
#define NC_API_CHAT_REQUEST_H

#include "gen/generate.h"
#include "nectar.h"

/* The gen_constraint hooks of r, restarted; NULL when r constrains nothing. */
const gen_constraint *api_chat_request_constraint(nc_chat_request *r);

#endif
