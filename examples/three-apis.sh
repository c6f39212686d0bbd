#!/bin/sh
# One question through each of the three APIs agent-step speaks: Chat
# Completions, Anthropic's Messages API and OpenAI's Responses API.  The
# transcript and the answer line are the same whichever it is; only
# AGENT_API changes.
#
#   examples/three-apis.sh "What is 2+2?"
#
# Each API's own endpoint and key unless AGENT_BASE_URL is set (a local
# server or a gateway that speaks all three): OPENAI_API_KEY for chat
# and responses, ANTHROPIC_API_KEY for anthropic.  The models:
# CHAT_MODEL (gpt-4o-mini), ANTHROPIC_MODEL (claude-sonnet-4-5),
# RESPONSES_MODEL (gpt-5-codex, which answers on /v1/responses only).
set -eu
q=${1:?usage: three-apis.sh QUESTION}
msg=$(jq -nc --arg q "$q" '{role: "user", content: $q}')
for api in chat anthropic responses; do
	case $api in
	chat) model=${CHAT_MODEL:-gpt-4o-mini} ;;
	anthropic) model=${ANTHROPIC_MODEL:-claude-sonnet-4-5} ;;
	responses) model=${RESPONSES_MODEL:-gpt-5-codex} ;;
	esac
	answer=$(printf '%s\n' "$msg" |
		AGENT_API=$api AGENT_MODEL=$model agent-step |
		agent-step --answer)
	printf '%s (%s): %s\n' "$api" "$model" "$answer"
done
