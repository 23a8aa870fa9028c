/* host-connect.h: `sbx-host connect HOST PORT` (cmd/host-connect.c). */
#ifndef SBX_HOST_CONNECT_H
#define SBX_HOST_CONNECT_H

/* Open a tunnel to HOST:PORT through the in-sandbox proxy endpoint and
 * relay stdin and stdout through it: the exit status (0 when the tunnel
 * closed, 1 refused, 64 bad operands, 69 no proxy). */
int	sbx_host_connect(const char *host, const char *port);

#endif
