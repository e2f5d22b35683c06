from __future__ import annotations

import pytest

from chainreact.tools.builtin.bash_policy import CommandPolicy, Refused

DEFAULT = CommandPolicy()

REFUSED = [
    "sudo ls", "echo hi | sudo ls", "ls && shutdown now", "ls; reboot", "ls || halt", "true & poweroff",
    "ls\nsudo ls", "\\\nsudo ls", "echo $(sudo id)", 'echo "$(sudo id)"', "echo `sudo id`",
    "cat <(sudo cat x)", "(sudo ls)", "{ sudo ls; }", "if true; then sudo ls; fi",
    "bash -c 'sudo ls'", 'sh -lc "reboot"',
    "eval sudo ls", "timeout 5 sudo ls", "env FOO=1 sudo ls", "nohup reboot &", "echo / | xargs sudo rm",
    "find . -exec dd if=x \\;", "/usr/bin/sudo ls", "s\\udo ls", "'sudo' ls", "FOO=1 sudo ls",
    "echo a#b; sudo ls", "ls 2>&1 >/dev/null; sudo ls", "su -c id", "doas ls", "systemctl reboot",
    "rm -rf /", "rm -fr /*", "rm -r -f ~", "rm --recursive --force $HOME", "rm -rf .", "rm -rf *",
    "rm -rf /usr", "rm -rf //", "rm -Rf ../", "rm --no-preserve-root -rf /", "chmod -R 777 /",
    "chown -R me:me /", "mkfs.ext4 /dev/sda", "mkfs -t ext4 /dev/sda", "dd if=/dev/zero of=/dev/sda",
    ":(){ :|:& };:", "bomb() { bomb | bomb & }; bomb", "x=sudo; $x ls", "${CMD} ls", "/usr/bin/su* -c id",
    "echo $(date) | sudo ls", "echo $(ls); reboot", "echo $(ls)\nreboot", "cat <(ls) <(sudo ls)",
    "echo 'unterminated", "echo $(sudo", "echo `sudo", "echo ls | bash", "cat script | sh",
]

ALLOWED = [
    "ls -la", "echo hi | wc -l", "git status && git diff", "rm -rf build", "rm -rf ./build/*",
    "rm -f /tmp/x.txt", "chmod -R 755 scripts", "chmod 644 /etc", "python -c 'print(1)'", 'echo "rm -rf /"',
    'grep -r "sudo" .', "find . -name '*.py' -exec wc -l {} +", 'for f in *.py; do wc -l "$f"; done',
    "cat <<EOF\nhello\nEOF", "FOO=1 make test", "echo $((1+2))", "timeout 5 make", "ls > out.txt 2>&1",
    "f() { echo hi; }; f", "bash script.sh", "cd sub && pytest -q", "echo $(date) `whoami`",
    "ls $(echo src) | wc -l", "x=$(pwd) && echo $x", "diff <(ls a) <(ls b)",
]


@pytest.mark.parametrize("command", REFUSED)
def test_default_policy_refuses(command: str) -> None:
    with pytest.raises(Refused):
        DEFAULT.check(command)


@pytest.mark.parametrize("command", ALLOWED)
def test_default_policy_allows(command: str) -> None:
    DEFAULT.check(command)


def test_refusal_names_command_and_rule() -> None:
    with pytest.raises(Refused, match=r"'sudo' is not allowed \(default deny rule 'sudo'\)"):
        DEFAULT.check("ls | sudo ls")
    with pytest.raises(Refused, match="recursive flag on '/'"):
        DEFAULT.check("rm -rf /")


def test_allow_list_checks_every_command() -> None:
    p = CommandPolicy(allow=("ls", "wc", "git status*", "python*"))
    for ok in ["ls | wc -l", "git status", "git status --short", "cd sub && ls", "python3 x.py", "echo hi"]:
        p.check(ok)
    for bad in ["ls | grep x", "git push", "ls; curl x", "echo $(curl x)", "bash -c ls", "timeout 3 ls"]:
        with pytest.raises(Refused, match="allow list"):
            p.check(bad)
    with pytest.raises(Refused, match="sudo"):
        CommandPolicy(allow=("sudo",)).check("sudo ls")  # deny wins over allow


def test_configured_deny_and_disabling_defaults() -> None:
    p = CommandPolicy(deny=("curl", "git push*"))
    with pytest.raises(Refused, match="configured deny rule 'curl'"):
        p.check("ls && curl http://x")
    with pytest.raises(Refused, match="git push"):
        p.check("git push origin main")
    p.check("git pull")
    with pytest.raises(Refused):
        p.check("sudo ls")  # defaults still apply
    CommandPolicy(default_deny=False).check("sudo ls")
    CommandPolicy(default_deny=False).check("rm -rf /")


def test_end_of_options_does_not_hide_a_sweeping_target() -> None:
    # `--` ends the flags: what follows is a target even when it looks like a flag, and the recursive
    # flags before it still count (issue 22: a mutation that stopped the scan at `--` survived).
    for command in ("rm -rf -- /", "rm -r -- ~", "chmod -R 777 -- /", "rm -rf -- build /"):
        with pytest.raises(Refused, match="recursive flag on"):
            DEFAULT.check(command)
    DEFAULT.check("rm -rf -- build")
    DEFAULT.check("rm -- -r /")  # after `--`, "-r" is a file name: nothing recursive here
