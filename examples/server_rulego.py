"""`chainreact serve` as RuleGo's server: the calls RuleGo's web UI makes, step by step.

Serves a copy of examples/chains/alarm.json in-process on a free loopback port, then, as the UI does: log
in, list the chains, open one, save an edit (written back to its file), undeploy it (messages refused)
and deploy it again, run a message in debug mode with the debug websocket open (each node's IN and OUT),
read the run log and a node's debug items, and list the components the editor offers. Nothing leaves
127.0.0.1. (docs/server.md#rulego-routes; RuleGo's UI itself: docs/server.md#rulegos-web-ui)
"""

import json
import shutil
import tempfile
import threading
from pathlib import Path

import httpx
from websockets.sync.client import connect

from chainreact.server import Catalog, create_app, serve_in_background
from chainreact.server.login import UserStore, hash_password

ALARM = Path(__file__).resolve().parent / "chains" / "alarm.json"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp, "chains")
        folder.mkdir()
        shutil.copy(ALARM, folder / "alarm.json")
        users_file = Path(tmp, "users.json")
        users_file.write_text(json.dumps({"users": [{"name": "admin", "password": hash_password("admin"),
                                                     "permissions": ["read", "write", "execute"]}]}))
        app = create_app(Catalog.load([folder]), users=UserStore.load(users_file), secret="example-secret")
        with serve_in_background(app) as base:
            api = base + "/api/v1"
            login = httpx.post(api + "/login", json={"username": "admin", "password": "admin"}).json()
            print("login:", sorted(k for k in login if k in ("token", "expiresAt")))
            ui = httpx.Client(headers={"Authorization": "Bearer " + login["token"]})

            page = ui.get(api + "/rules", params={"page": 1, "size": 10}).json()
            print("chains:", page["total"], [i["ruleChain"]["name"] for i in page["items"]])

            dsl = ui.get(api + "/rules/alarm").json()
            dsl["ruleChain"]["configuration"]["vars"]["limit"] = 60  # the editor's variables tab
            print("save:", ui.post(api + "/rules/alarm", json=dsl).status_code,
                  "| file's limit:", json.loads((folder / "alarm.json").read_text())["ruleChain"]
                  ["configuration"]["vars"]["limit"])

            ui.post(api + "/rules/alarm/operate/stop")
            refused = ui.post(api + "/rules/alarm/execute/TELEMETRY", json={"temperature": 71})
            print("stopped:", refused.status_code, refused.text)
            ui.post(api + "/rules/alarm/operate/start")

            events = []
            ws_url = base.replace("http://", "ws://") + "/api/v1/logs/ws/alarm/client-1"
            with connect(ws_url) as ws:
                def receive() -> None:
                    while len(events) < 7:
                        events.append(json.loads(ws.recv(timeout=10)))

                listener = threading.Thread(target=receive)
                listener.start()
                out = ui.post(api + "/rules/alarm/execute/TELEMETRY", json={"temperature": 71},
                              params={"debugMode": "true", "room": "lab"})
                listener.join()
            print("execute:", out.status_code, out.headers["content-type"], out.text)
            print("websocket:", ", ".join(f"{e['nodeId']} {e['flowType']} {e['relationType']}".rstrip()
                                          for e in events))

            logs = ui.get(api + "/logs/runs", params={"chainId": "alarm"}).json()
            visits = [(n["nodeId"], n["relationType"]) for n in logs["items"][0]["logs"]]
            print("run log:", logs["total"], visits)
            debug = ui.get(api + "/logs/debug", params={"chainId": "alarm", "nodeId": "alarm"}).json()
            print("node debug items:", debug["total"], [i["flowType"] for i in debug["items"]])

            nodes = ui.get(api + "/components").json()["nodes"]
            agent = next(n for n in nodes if n["type"] == "ai/agent")
            print("components:", len(nodes), "| ai/agent fields:", [f["name"] for f in agent["fields"]][:4])


if __name__ == "__main__":
    main()
