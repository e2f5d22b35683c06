// Chat sessions kept in the browser (localStorage), per agent or chain: the conversation sent with each
// request and what was shown (text, reasoning, tool cards), so a session can be picked up again.

const PREFIX = "chainreact.sessions.";
const MAX_SESSIONS = 30;

export class SessionStore {
  constructor(kind, id) {
    this.key = PREFIX + kind + ":" + id;
  }

  all() {
    try {
      const list = JSON.parse(localStorage.getItem(this.key) || "[]");
      return Array.isArray(list) ? list : [];
    } catch (_) {
      return [];
    }
  }

  get(sid) {
    return this.all().find((x) => x.id === sid) || null;
  }

  create() {
    const session = { id: "s-" + Date.now().toString(36) + Math.random().toString(36).slice(2, 6),
      title: "New session", created: Date.now(), turns: [] };
    this.save(session);
    return session;
  }

  save(session) {
    const list = this.all().filter((x) => x.id !== session.id);
    list.unshift(session);
    try {
      localStorage.setItem(this.key, JSON.stringify(list.slice(0, MAX_SESSIONS)));
    } catch (_) {
      // storage full or disabled: the chat still works, it just is not kept
    }
  }

  remove(sid) {
    localStorage.setItem(this.key, JSON.stringify(this.all().filter((x) => x.id !== sid)));
  }
}
