"""Each server of a machine logs to a file of its own (issue 12, defect 7).

Before, every `mq broker` and `mq namesrv` appended to ``~/logs/mqlogs/broker.log`` /
``namesrv.log``: two brokers of different clusters interleaved in one file. Now a broker
logs under its store root, named by broker, and a name server by its port.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

from tests.support.processes import launch, mq, start_broker

LOG_PART = re.compile(r"log=(\S+?)\)")


def test_two_brokers_of_one_machine_log_to_files_of_their_own(tmp_path: Path) -> None:
    names = ("broker-a", "broker-b")
    brokers = []
    try:
        for name in names:  # HOME is each one's workdir: where the old shared file was
            work = tmp_path / name
            brokers.append(start_broker(work, name=name, store=work / "s", own_log_dir=True))
        for proc, name in zip(brokers, names, strict=True):
            match = LOG_PART.search(proc.stdout_lines[-1])
            assert match, proc.stdout_lines
            assert Path(match.group(1)) == proc.store / "logs" / f"broker-{name}.log"
        for proc in brokers:
            proc.stop()
        for proc, name, other in zip(brokers, names, reversed(names), strict=True):
            text = (proc.store / "logs" / f"broker-{name}.log").read_text()
            assert f"broker {name} " in text and "started" in text
            assert f"broker {other} " not in text
            assert not (tmp_path / name / "logs").exists()
    finally:
        for proc in brokers:
            proc.stop()


def test_broker_log_dir_comes_from_the_flag_the_file_or_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    env = {"HOME": str(tmp_path / "home")}
    shown = mq("broker", "-p", "--store", str(store), env=env)
    assert shown.returncode == 0, shown.stderr
    assert f"logDir={store / 'logs'}\n" in shown.stdout
    flag = mq("broker", "-p", "--store", str(store), "--log-dir", str(tmp_path / "d"), env=env)
    assert f"logDir={tmp_path / 'd'}\n" in flag.stdout
    conf = tmp_path / "broker.conf"
    conf.write_text(f"logDir={tmp_path / 'e'}\n")
    keyed = mq("broker", "-p", "-c", str(conf), "--store", str(store), env=env)
    assert f"logDir={tmp_path / 'e'}\n" in keyed.stdout


def test_name_server_logs_under_log_dir_named_by_port(tmp_path: Path) -> None:
    log_dir = tmp_path / "nslogs"
    # HOME is where the old shared file was
    args = ["namesrv", "--listen", "127.0.0.1:0", "--log-dir", str(log_dir)]
    server = launch(args, tmp_path / "home")
    try:
        match = LOG_PART.search(server.stdout_lines[-1])
        assert match, server.stdout_lines
        log = log_dir / f"namesrv-pid{server.proc.pid}.log"
        assert Path(match.group(1)) == log
        server.proc.send_signal(signal.SIGINT)
        server.proc.wait(15)
        assert "name server started" in log.read_text()
        assert not (tmp_path / "home" / "logs").exists()
    finally:
        server.kill()
