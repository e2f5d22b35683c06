"""The `chainreact` command line: run as a real subprocess, checking exit codes, stdout and stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chainreact.cli import UsageError, build_globals, parse_global

ROOT = Path(__file__).resolve().parents[1]


def cli(
    *args: str, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("CHAINREACT_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "chainreact", *args],
        capture_output=True, text=True, env=full_env, input=stdin, cwd=ROOT, timeout=120,
    )


# ---------------------------------------------------------------- --global parsing


def test_global_plain_value_is_a_string() -> None:
    assert parse_global("name=42") == (["name"], "42")
    assert parse_global("url=http://h/v1?a=b") == (["url"], "http://h/v1?a=b")
    assert parse_global("empty=") == (["empty"], "")


def test_global_colon_equals_is_json() -> None:
    assert parse_global("n:=42") == (["n"], 42)
    assert parse_global("flags:=[1, true, null]") == (["flags"], [1, True, None])
    # ':=' after the first '=' belongs to the value
    assert parse_global("a=b:=c") == (["a"], "b:=c")


def test_global_dotted_keys_nest_and_merge() -> None:
    items = ["models.default.url=http://x/v1", "models.default.key=k", "models.alt.url=y", "top=1"]
    got = build_globals(items)
    assert got == {"models": {"default": {"url": "http://x/v1", "key": "k"}, "alt": {"url": "y"}}, "top": "1"}


@pytest.mark.parametrize("bad", ["novalue", "=x", "a..b=1", ".a=1", "n:={bad json"])
def test_global_bad_items_are_usage_errors(bad: str) -> None:
    with pytest.raises(UsageError) as e:
        build_globals([bad])
    assert repr(bad) in str(e.value)


def test_global_key_conflict_names_the_key() -> None:
    with pytest.raises(UsageError, match=r"a\.b is already a value"):
        build_globals(["a.b=1", "a.b.c=2"])


def test_globals_files_merge_under_items(tmp_path: Path) -> None:
    f1 = tmp_path / "g1.json"
    f1.write_text(json.dumps({"models": {"default": {"url": "u1", "key": "k1"}}, "keep": True}))
    f2 = tmp_path / "g2.yaml"
    f2.write_text("models:\n  default:\n    url: u2\n")
    got = build_globals(["models.default.key=k3"], [str(f1), str(f2)])
    assert got == {"models": {"default": {"url": "u2", "key": "k3"}}, "keep": True}


def test_globals_file_must_be_an_object(tmp_path: Path) -> None:
    f = tmp_path / "g.yaml"
    f.write_text("- a\n- b\n")
    with pytest.raises(UsageError, match="expected an object"):
        build_globals([], [str(f)])


# ---------------------------------------------------------------- validate / schema / version


def test_validate_ok_exits_0(tmp_path: Path) -> None:
    doc = tmp_path / "a.yaml"
    doc.write_text("systemPrompt: hi\nmaxStep: 5\ntools: [bash]\n")
    r = cli("validate", str(doc))
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{doc}: ok (agent 'a', 1 tool(s), model endpoint: the embedded local model)\n"
    assert r.stderr == ""


def test_validate_reports_each_error_with_its_json_path(tmp_path: Path) -> None:
    doc = tmp_path / "bad.json"
    doc.write_text(json.dumps({
        "id": "n1", "type": "ai/agent",
        "configuration": {"maxStep": "many", "params": {"temperature": 9}, "streamRetryMode": "sometimes"},
    }))
    r = cli("validate", str(doc))
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    paths = {line.split(": ")[1] for line in lines}
    assert paths == {
        "$.configuration.maxStep", "$.configuration.params.temperature", "$.configuration.streamRetryMode"
    }
    assert all(line.startswith(str(doc)) for line in lines)
    assert "Traceback" not in r.stderr


def test_validate_parses_each_tool_as_a_run_would_without_running_anything(tmp_path: Path) -> None:
    tools = [
        {"type": "http", "name": "orders", "description": "x"},  # no execution
        {"type": "http", "name": "ftp", "description": "x", "execution": {"endpoint": "ftp://host/x"}},
        {"type": "mcp", "name": "m",
         "config": {"url": "http://127.0.0.1:1/mcp", "transport": "carrier-pigeon"}},
        {"type": "builtin", "name": "teleport"},
        {"type": "agent", "name": "helper"},  # no targetId
        {"type": "python", "name": "f", "config": {"function": "nodots"}},
        # fine, or known only at run time: not reported
        {"type": "http", "name": "ok", "description": "x", "execution": {"endpoint": "https://api.example.com/o"}},
        {"type": "http", "name": "later", "description": "x", "execution": {"endpoint": "${global.base}/o"}},
        "bash",
    ]
    doc = tmp_path / "tools.json"
    doc.write_text(json.dumps({"id": "n1", "type": "ai/agent", "configuration": {"tools": tools}}))
    r = cli("validate", str(doc))
    assert r.returncode == 1
    paths = [line.split(": ")[1] for line in r.stderr.strip().splitlines()]
    at = "$.configuration.tools"
    assert paths == [f"{at}[0].execution.endpoint", f"{at}[1].execution.endpoint",
                     f"{at}[2].config.transport", f"{at}[3].name", f"{at}[4].targetId",
                     f"{at}[5].config.function"]
    assert "carrier-pigeon" in r.stderr and "teleport" in r.stderr
    assert "Traceback" not in r.stderr


def test_validate_unknown_fields_are_errors_unless_lenient(tmp_path: Path) -> None:
    doc = tmp_path / "a.json"
    doc.write_text(json.dumps({"systemPrompt": "x", "futureField": 1}))
    r = cli("validate", str(doc))
    assert r.returncode == 1
    assert r.stderr == f"{doc}: $.futureField: unknown field\n"
    r = cli("validate", "--lenient", str(doc))
    assert r.returncode == 0, r.stderr
    assert "warning:" in r.stderr and "$.futureField" in r.stderr


def test_validate_missing_file_and_mixed_batch(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text('{"systemPrompt": "hi"}')
    r = cli("validate", str(good), str(tmp_path / "nope.json"))
    assert r.returncode == 1
    assert "nope.json: no such file" in r.stderr
    assert "good.json: ok" in r.stdout


def test_validate_tells_documents_apart_by_shape(tmp_path: Path) -> None:
    chain = tmp_path / "chain.json"
    chain.write_text(json.dumps({"ruleChain": {"id": "c1"}, "metadata": {"nodes": []}}))
    flow = tmp_path / "flow.yaml"
    flow.write_text("nodes:\n  - {name: support, type: aiagent, start: true, userMessage: '{{userInput}}',\n"
                    "     output: {schema: {type: object}}}\n")
    agent = tmp_path / "agent.yaml"
    agent.write_text("systemPrompt: hi\n")
    r = cli("validate", str(chain), str(flow), str(agent))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"{chain}: ok (rule chain")
    assert lines[1].startswith(f"{flow}: ok (flow")
    assert lines[2].startswith(f"{agent}: ok (agent 'agent'")  # named by its file, as serve lists it


RUNS = {"agent": "run it with `chainreact run FILE PROMPT`, or talk to it with `chainreact chat FILE`",
        "chain": "run it with `chainreact chain run FILE --data ...`",
        "flow": "send it a message with `chainreact flow send FILE TEXT --session S`, or talk to it with "
                "`chainreact chat FILE`"}


@pytest.mark.parametrize(("command", "given", "what", "not_what"), [
    (["run", "{}", "hi"], "chain", "a rule chain", "an agent document"),
    (["run", "{}", "hi"], "flow", "a flow", "an agent document"),
    (["chain", "run", "{}", "--data", "x"], "agent", "an agent document", "a rule chain"),
    (["chat", "{}"], "chain", "a rule chain", "a flow"),  # chat talks to agents and flows
    (["flow", "send", "{}", "hi", "--session", "s"], "chain", "a rule chain", "a flow")])
def test_a_command_given_the_wrong_kind_of_document_says_what_runs_it(
        tmp_path: Path, command: list[str], given: str, what: str, not_what: str) -> None:
    # Before: a flow given to `run` said "check it with `chainreact validate`"; an agent given to `chat`
    # listed the flow fields it lacked ($.nodes: Field required, ...); to `chain run`, "not a rule chain".
    # (`chat` now talks to an agent too: tests/chat/test_chat_agent.py.)
    doc = tmp_path / f"{given}.json"
    doc.write_text(json.dumps({
        "chain": {"ruleChain": {"id": "c1"}, "metadata": {"nodes": []}},
        "flow": {"id": "f", "nodes": [{"name": "hi", "type": "message", "message": "Hi", "start": True}]},
        "agent": {"id": "a", "configuration": {"url": "http://127.0.0.1:9", "model": "m"}}}[given]))
    r = cli(*[str(doc) if part == "{}" else part for part in command])
    assert r.returncode == 1
    assert r.stderr == f"error: {doc}: this is {what}, not {not_what}: {RUNS[given]}\n"


@pytest.mark.parametrize("content", ["{}", '{"name": "pkg", "version": "1.0.0", "dependencies": {}}', "[1]"])
def test_validate_refuses_what_is_no_known_document(content: str, tmp_path: Path) -> None:
    doc = tmp_path / "package.json"
    doc.write_text(content)
    r = cli("validate", str(doc))
    assert r.returncode == 1
    assert r.stdout == ""
    assert str(doc) in r.stderr and "Traceback" not in r.stderr


def test_validate_demo_and_spec_examples_load() -> None:
    r = cli("validate", "examples/demo-agent.json")
    assert r.returncode == 0, r.stderr


def test_schema_is_json_schema_with_defs_and_accepts_the_demo() -> None:
    import jsonschema

    r = cli("schema")
    assert r.returncode == 0
    schema = json.loads(r.stdout)
    assert "$defs" in schema and "AgentConfig" in schema["$defs"]
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    demo = json.loads((ROOT / "examples/demo-agent.json").read_text())
    assert list(validator.iter_errors(demo)) == []
    assert list(validator.iter_errors({"maxStep": "x"})) != []


def test_version() -> None:
    import chainreact

    r = cli("version")
    assert r.returncode == 0
    assert r.stdout.startswith(f"chainreact {chainreact.__version__} ")


# ---------------------------------------------------------------- start-up cost, usage and error handling


def test_help_does_not_import_heavy_modules() -> None:
    code = (
        "import sys, json\n"
        "from chainreact.cli import main\n"
        "for argv in (['--help'], ['run', '--help'], ['validate', '--help']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = ['pydantic', 'httpx', 'yaml', 'chainreact.expr', 'orjson', 'asyncio', 'chainreact.config',\n"
        "         'llama_cpp']\n"
        "print(json.dumps([m for m in heavy if m in sys.modules]))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == []
    assert "usage: chainreact" in r.stdout


def test_no_command_prints_help_and_exits_2() -> None:
    r = cli()
    assert r.returncode == 2
    assert "usage: chainreact" in r.stderr


def test_usage_errors_exit_2() -> None:
    r = cli("run", "examples/demo-agent.json", "hi", "--global", "novalue")
    assert r.returncode == 2
    assert r.stderr.startswith("error: --global 'novalue'")
    r = cli("run", "examples/demo-agent.json", "hi", "--json", "--jsonl")
    assert r.returncode == 2
    assert "not allowed with argument" in r.stderr


def test_runtime_error_is_one_line_unless_debug() -> None:
    env = {"CHAINREACT_LOCAL_MODEL": "/nonexistent/model.gguf"}
    r = cli("local-model", env=env)
    assert r.returncode == 1
    assert r.stderr.startswith("error: CHAINREACT_LOCAL_MODEL=/nonexistent/model.gguf: no such file")
    assert "Traceback" not in r.stderr
    r = cli("--debug", "local-model", env=env)
    assert r.returncode == 1
    assert "Traceback" in r.stderr and "LocalModelError" in r.stderr
    r = cli("local-model", "--debug", env=env)  # the flag also works after the command
    assert "Traceback" in r.stderr


# ---------------------------------------------------------------- run (against a scripted FakeLLM server)

CALC = "def add(a: int, b: int) -> int:\n    \"\"\"Add two integers.\"\"\"\n    return a + b\n"


@pytest.fixture
def calc_agent(tmp_path: Path) -> Path:
    (tmp_path / "calc_tools.py").write_text(CALC)
    return tmp_path


def write_agent(dir_: Path, url: str, **extra: object) -> Path:
    doc = {
        "url": url, "key": "test-key", "model": "fake-model", "systemPrompt": "You add numbers.",
        "tools": [{"type": "python", "name": "add", "config": {"function": "calc_tools:add"}}], **extra,
    }
    p = dir_ / "agent.json"
    p.write_text(json.dumps(doc))
    return p


def run_cli(dir_: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    # dir_ goes in front of (not instead of) the PYTHONPATH that points at the sources under test
    path = os.pathsep.join(p for p in (str(dir_), os.environ.get("PYTHONPATH", "")) if p)
    return cli(*args, env={"PYTHONPATH": path}, stdin=stdin)


ADD_THEN_ANSWER = [
    {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}], "arg_chunks": 3},
    {"text": "2 + 3 = 5", "chunks": 3},
]


def test_run_json_output(calc_agent: Path) -> None:
    from chainreact.testing import FakeLLM

    with FakeLLM(ADD_THEN_ANSWER) as srv:
        r = run_cli(calc_agent, "run", str(write_agent(calc_agent, srv.url)), "What is 2 + 3?", "--json")
        assert r.returncode == 0, r.stderr
        second = srv.chat_requests[1]
    out = json.loads(r.stdout)
    assert out["content"] == "2 + 3 = 5"
    assert out["stop_reason"] == "stop" and out["steps"] == 2
    usage = out["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    roles = [m["role"] for m in out["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert out["messages"][2]["tool_calls"][0]["function"]["name"] == "add"
    assert out["messages"][3]["content"] == "5"
    assert second.messages[-1]["role"] == "tool" and second.messages[-1]["content"] == "5"


def test_run_plain_output_and_prompt_from_stdin(calc_agent: Path) -> None:
    from chainreact.testing import FakeLLM

    with FakeLLM([{"text": "hello there"}]) as srv:
        r = run_cli(calc_agent, "run", str(write_agent(calc_agent, srv.url)), "-", stdin="greet me\n")
        assert r.returncode == 0, r.stderr
        sent = srv.chat_requests[0].messages
    assert r.stdout == "hello there\n"
    assert sent[-1] == {"role": "user", "content": "greet me\n"}


def test_run_jsonl_streams_one_event_per_line(calc_agent: Path) -> None:
    from chainreact.testing import FakeLLM

    with FakeLLM(ADD_THEN_ANSWER) as srv:
        r = run_cli(calc_agent, "run", str(write_agent(calc_agent, srv.url)), "What is 2 + 3?", "--jsonl")
        assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "run_start" and types[-1] == "final"
    call = next(e for e in events if e["type"] == "tool_call")
    assert call["call"]["function"]["name"] == "add"
    assert json.loads(call["call"]["function"]["arguments"]) == {"a": 2, "b": 3}
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["content"] == "5" and result["is_error"] is False
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == "2 + 3 = 5"
    assert events[-1]["content"] == "2 + 3 = 5"
    assert types.index("tool_call") < types.index("tool_result") < types.index("final")


def test_run_stream_text_on_stdout_tool_activity_on_stderr(calc_agent: Path) -> None:
    from chainreact.testing import FakeLLM

    with FakeLLM(ADD_THEN_ANSWER) as srv:
        r = run_cli(calc_agent, "run", str(write_agent(calc_agent, srv.url)), "What is 2 + 3?", "--stream")
        assert r.returncode == 0, r.stderr
        assert all(req.body and req.body.get("stream") for req in srv.chat_requests)
    assert r.stdout == "2 + 3 = 5\n"
    assert r.stderr.splitlines() == ['→ add({"a":2,"b":3})', "← add: 5"]  # FakeLLM sends compact JSON


def test_run_global_reaches_templates(calc_agent: Path) -> None:
    from chainreact.testing import FakeLLM

    with FakeLLM([{"text": "ok"}]) as srv:
        doc = write_agent(calc_agent, "${global.endpoint}", model="${global.models.name}")
        r = run_cli(calc_agent, "run", str(doc), "hi", "--global", f"endpoint={srv.url}",
                    "--global", "models.name=picked-model")
        assert r.returncode == 0, r.stderr
        body = srv.chat_requests[0].body
    assert body is not None and body["model"] == "picked-model"


def test_run_model_failure_is_one_error_line_and_exit_1(calc_agent: Path) -> None:
    from chainreact.testing import FakeLLM

    turn = {"status": 401, "message": "bad key"}
    with FakeLLM([turn, turn, turn, turn]) as srv:
        r = run_cli(calc_agent, "run", str(write_agent(calc_agent, srv.url, maxRetries=-1)), "hi")
    assert r.returncode == 1
    assert r.stderr.startswith("error: ") and "401" in r.stderr
    assert "Traceback" not in r.stderr
    assert r.stdout == ""


def test_run_invalid_document_exits_1_with_path(tmp_path: Path) -> None:
    doc = tmp_path / "bad.json"
    doc.write_text(json.dumps({"maxStep": -5}))
    r = cli("run", str(doc), "hi")
    assert r.returncode == 1
    assert "$.maxStep" in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------- delegated commands


def test_fake_llm_command_passes_its_options_through(tmp_path: Path) -> None:
    import signal

    import httpx

    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "scripted answer"}]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "chainreact", "fake-llm", "--script", str(script)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        r = httpx.post(f"{url}/chat/completions", json={"messages": [{"role": "user", "content": "x"}]})
        assert r.json()["choices"][0]["message"]["content"] == "scripted answer"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)


def test_complete_command(tmp_path: Path) -> None:
    from chainreact.testing import FakeLLM

    doc = tmp_path / "a.json"
    with FakeLLM([{"text": "one call"}]) as srv:
        doc.write_text(json.dumps({"url": "${global.u}", "model": "m", "key": "k"}))
        r = cli("complete", str(doc), "hi", "--global", f"u={srv.url}")
        assert r.returncode == 0, r.stderr
        body = srv.chat_requests[0].body
        assert body is not None
        assert body["messages"][-1] == {"role": "user", "content": "hi"}
        assert "tools" not in body
    assert r.stdout == "one call\n"


# ---------------------------------------------------------------- one path from a document (issue 9 item 17)


def readme_document() -> dict[str, object]:
    """The agent document shown in README.md, as written."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## A document", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    doc: dict[str, object] = json.loads(block)
    return doc


def test_readme_failover_example_works_as_written(tmp_path: Path) -> None:
    from chainreact.testing import FakeLLM

    doc = readme_document()
    cfg = doc["configuration"]
    assert isinstance(cfg, dict)
    # As written, but pointing its two URLs at local fake servers: the primary fails, the backup answers.
    fail = {"status": 503, "headers": {"Retry-After": "0"}}
    with FakeLLM([fail] * 4) as primary, FakeLLM([{"text": "from the backup"}]) as backup:
        cfg["url"] = primary.url
        cfg["failover"][0]["url"] = backup.url
        p = tmp_path / "agent.json"
        p.write_text(json.dumps(doc))
        r = cli("run", str(p), "List the files here", "--global", "api_key=sk-primary",
                "--global", "backup_key=sk-backup")
        assert r.returncode == 0, r.stderr
        assert primary.chat_requests[0].headers["authorization"] == "Bearer sk-primary"
        assert [q.headers["authorization"] for q in backup.chat_requests] == ["Bearer sk-backup"]
    assert r.stdout == "from the backup\n"


@pytest.mark.parametrize("command", ["run", "complete"])
def test_run_and_complete_share_globals_and_exit_codes(command: str, tmp_path: Path) -> None:
    doc = tmp_path / "a.json"
    doc.write_text(json.dumps({"url": "http://127.0.0.1:9/v1", "key": "${global.api_key}", "model": "m"}))
    bad_global = cli(command, str(doc), "hi", "--global", "novalue")
    assert bad_global.returncode == 2 and "novalue" in bad_global.stderr
    undefined = cli(command, str(doc), "hi")
    assert undefined.returncode == 1
    assert "global.api_key" in undefined.stderr and "$.key" in undefined.stderr
    assert "Traceback" not in undefined.stderr
    missing = cli(command, str(tmp_path / "nope.json"), "hi")
    assert missing.returncode == 1 and "no such file" in missing.stderr
    gfile = tmp_path / "g.yaml"
    gfile.write_text("api_key: [not, closed\n")
    bad_file = cli(command, str(doc), "hi", "--globals", str(gfile))
    assert bad_file.returncode == 2 and str(gfile) in bad_file.stderr


# ---------------------------------------------------------------- notices and errors, once (issue 10 item 8)


def test_stream_prints_the_final_error_once_and_each_retry_once(calc_agent: Path) -> None:
    from chainreact.testing import FakeLLM

    fail = {"status": 500, "message": "boom", "headers": {"Retry-After": "0"}}
    with FakeLLM([fail, fail]) as srv:
        doc = write_agent(calc_agent, srv.url, maxRetries=1)
        r = run_cli(calc_agent, "run", str(doc), "hi", "--stream")
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert [line for line in lines if line.startswith("error:")] == [lines[-1]]
    assert "boom" in lines[-1]
    assert sum("retry" in line for line in lines) == 1 and lines[0].startswith("! retry 1 on ")


def test_library_warnings_go_through_the_cli_output_once(calc_agent: Path) -> None:
    from chainreact.testing import FakeLLM

    fail = {"status": 500, "message": "boom", "headers": {"Retry-After": "0"}}
    with FakeLLM([fail, {"text": "ok"}]) as srv:
        doc = write_agent(calc_agent, srv.url, futureField=1, unknownFields="warn",
                          systemPrompt="${global.who} and ${global.who}")
        r = run_cli(calc_agent, "run", str(doc), "hi")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "ok\n"
    lines = r.stderr.splitlines()
    assert all(line.startswith("warning: ") for line in lines), lines
    assert sum("$.futureField" in line for line in lines) == 1
    assert sum("global.who is not defined" in line for line in lines) == 1
    assert sum("attempt 1/4 failed" in line for line in lines) == 1
    assert "loader.py" not in r.stderr and "UnknownFieldWarning" not in r.stderr
