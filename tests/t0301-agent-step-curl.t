#!/bin/sh
# t0300-agent-step.t again, each request through libcurl (agent-step with
# AGENT_HTTP=curl)
AH_HTTP=curl
export AH_HTTP
. "$(dirname "$0")/t0300-agent-step.t"
