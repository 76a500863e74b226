"""A job's id is its resume key in every run store: it must not move when code moves.

The ids below were computed before the compiler's builder spec moved out of the runtime
(`nader.compiler.network.BUILDER`, once the runtime's `DEFAULT_BUILDER`); they pin the on-disk
identity of jobs, so a change to the spec's string or to what the id hashes fails here.
"""
from __future__ import annotations

import dataclasses

from nader.compiler.network import BUILDER
from nader.runtime.records import Job

BLOCK = "##X##\n0:input\n1:output\n2:BN\n0->2\n2->1\n"


def test_a_job_made_today_has_the_id_it_had_before():
    job = Job(arch=BLOCK, skeleton="nb201", dataset="cifar10", preset="nb201-12", seed=888, data_dir=None,
              widths=[16, 32, 64], depths=[5, 5, 5], options={"epochs": 3, "device": "cpu"}, builder=BUILDER)
    assert job.job_id == "80ff43355b59bf60"
    assert Job(arch="x", builder=BUILDER).job_id == "bb0d6bd798e174ee"


def test_the_id_ignores_labels_and_follows_what_is_computed():
    job = Job(arch=BLOCK, builder=BUILDER)
    assert dataclasses.replace(job, name="a.nad", run_dir="/tmp/r", options={"device": "cuda:1"}).job_id == job.job_id
    assert dataclasses.replace(job, builder="tests:other").job_id != job.job_id
    assert Job.from_json(job.to_json()).job_id == job.job_id
