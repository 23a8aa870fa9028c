/*
 * bridgeinf.c: POST /v1/inference/chat, forwarded with libcurl to the
 * OpenAI-compatible endpoint of config/sandbox.json (bridge.inference).
 */
#include <jansson.h>

#include "bridge.h"

void	sbx_bridge_inference(const struct sbx_bridge_req *,
	    struct sbx_bridge_resp *);

void
sbx_bridge_inference(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	sbx_bridge_error(r, 501, "not_configured", "inference is off");
}
