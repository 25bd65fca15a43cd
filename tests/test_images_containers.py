"""Test containers: who owns them, and the sweep that removes what a killed run left (a real engine)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import uuid

import docker.errors
import pytest

from patchset.images import containers

pytest_plugins = ["conftest_docker"]


def test_this_process_owns_what_it_labels_and_an_ended_one_is_gone():
    me = containers.owner()
    host, pid, started = me.rsplit(":", 2)
    assert host == socket.gethostname() and pid == str(os.getpid()) and started.isdigit()
    assert not containers.owner_gone(me)
    ended = subprocess.Popen(["true"])
    ended.wait()
    assert containers.owner_gone(f"{host}:{ended.pid}:{started}")
    assert containers.owner_gone(f"{host}:{os.getpid()}:{int(started) + 1}")  # the id, reused by a later process
    assert not containers.owner_gone(f"another-host:{ended.pid}:{started}")  # not ours to say
    assert not containers.owner_gone("garbage")


@pytest.mark.docker
def test_the_sweep_removes_a_killed_runs_containers_and_spares_live_ones(docker_client, standin):
    label = f"io.patchset.test-sweep-{uuid.uuid4().hex[:8]}"
    host, _, started = containers.owner().rsplit(":", 2)
    ended = subprocess.Popen(["true"])
    ended.wait()
    now = int(time.time())
    kinds = {
        "live": {containers.OWNER_LABEL: containers.owner(), containers.DEADLINE_LABEL: str(now + 600)},
        "killed": {containers.OWNER_LABEL: f"{host}:{ended.pid}:{started}", containers.DEADLINE_LABEL: str(now + 600)},
        "elsewhere": {containers.OWNER_LABEL: f"other:{ended.pid}:1", containers.DEADLINE_LABEL: str(now + 600)},
        "expired": {containers.OWNER_LABEL: f"other:{ended.pid}:1", containers.DEADLINE_LABEL: str(now - 1)},
        "unowned": {},  # made before containers had owners: removed once it is not running
    }
    made = {}
    try:
        for name, labels in kinds.items():
            made[name] = docker_client.containers.create(standin, entrypoint=["true"], network_disabled=True,
                                                         labels={label: name, **labels})
        removed = set(containers.sweep(docker_client, label))
        assert removed == {made[n].name for n in ("killed", "expired", "unowned")}
        left = {c.labels[label] for c in docker_client.containers.list(all=True, filters={"label": label})}
        assert left == {"live", "elsewhere"}
    finally:
        for c in docker_client.containers.list(all=True, filters={"label": label}):
            c.remove(force=True)


@pytest.mark.docker
def test_a_look_into_an_image_is_owned_and_sweeps_what_a_killed_look_left(docker_client, standin):
    from patchset.images.engine import ImageFiles

    host, _, started = containers.owner().rsplit(":", 2)
    ended = subprocess.Popen(["true"])
    ended.wait()
    left = docker_client.containers.create(standin, entrypoint=["true"], network_disabled=True,
                                           labels={**containers.inspect_labels(),
                                                   containers.OWNER_LABEL: f"{host}:{ended.pid}:{started}"})
    live = docker_client.containers.create(standin, entrypoint=["true"], network_disabled=True,
                                           labels=containers.inspect_labels(deadline=time.time() + 600))
    try:
        with ImageFiles(docker_client, standin) as files:
            mine = files._container
            assert mine is not None and mine.labels[containers.OWNER_LABEL] == containers.owner()
            ids = {c.id for c in docker_client.containers.list(all=True,
                                                               filters={"label": containers.INSPECT_LABEL})}
            assert left.id not in ids and {live.id, mine.id} <= ids
        status, out, _ = containers.run_once(docker_client, docker_client.images.get(standin),
                                             ["python3", "-c", "print('x')"], timeout=60)
        assert (status, out) == (0, "x")
    finally:
        for c in (left, live):
            with contextlib.suppress(docker.errors.NotFound):
                c.remove(force=True)
