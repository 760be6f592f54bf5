/* Diagnostics to stderr. Library code reports failures through nc_error;
 * logging is for progress and warnings the caller did not ask to receive. */
#ifndef NC_BASE_LOG_H
#define NC_BASE_LOG_H

#include "base/error.h"

typedef enum { NC_LOG_DEBUG, NC_LOG_INFO, NC_LOG_WARN, NC_LOG_ERROR, NC_LOG_QUIET } nc_log_level;

void nc_log_set_level(nc_log_level level);
nc_log_level nc_log_get_level(void);
void nc_log(nc_log_level level, const char *fmt, ...) NC_PRINTF(2, 3);

#endif
