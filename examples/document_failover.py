"""An agent document with failover, its keys and endpoints coming from globals.

The primary and the backup are two scripted servers: the primary answers HTTP 503, so after its retries
the run fails over to the backup. `resolve_agent_config` is the one path from a document to the runtime
configuration (the same as `chainreact run agent.json --global ...`): every `${global...}` in the primary
and in each failover endpoint is rendered, and an undefined one is an error naming it.
"""

from chainreact import Agent, ConfigError, resolve_agent_config
from chainreact.testing import FakeLLM

DOCUMENT = {
    "id": "node_agent", "type": "ai/agent", "name": "Assistant",
    "configuration": {
        "url": "${global.primary_url}",
        "key": "${global.api_key}",
        "model": "deepseek-chat",
        "maxRetries": 1,
        "systemPrompt": "You are a helpful AI assistant.",
        "params": {"extraFields": {"thinking.budget_tokens": "${global.budget}"}},
        "failover": [{"url": "${global.backup_url}", "key": "${global.backup_key}"}],
    },
}

FAIL = {"status": 503, "headers": {"Retry-After": "0"}, "message": "overloaded"}

with FakeLLM([FAIL, FAIL]) as primary, FakeLLM([{"text": "Hello from the backup."}]) as backup:
    globals_ = {"primary_url": primary.url, "backup_url": backup.url, "api_key": "sk-primary",
                "backup_key": "sk-backup", "budget": 1024}
    doc = resolve_agent_config(DOCUMENT, globals_)
    print("failover[0].key =", doc.config.failover[0].key)
    print("extraFields =", doc.config.params.extraFields)  # 1024 stays a number

    agent = Agent.from_config(doc, globals=globals_)
    result = agent.run_sync("Say hello.")
    print("answer:", result.content)
    print("backup saw:", backup.chat_requests[0].headers["authorization"])

try:
    resolve_agent_config(DOCUMENT, {"primary_url": "http://127.0.0.1:9/v1", "api_key": "k"})
except ConfigError as e:
    print("error:", e.errors[0][0], "->", e.errors[0][1].split(" (set it")[0])
