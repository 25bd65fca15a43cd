"""The driver preflight of `test --image --gpus`: the host's NVIDIA driver against the image's CUDA."""

from __future__ import annotations

import os

import pytest

from patchset.runners import driver

#: vLLM 0.29.0's image: CUDA 13.0.3, forward compatibility off unless asked (its docker/Dockerfile).
VLLM_029 = {"CUDA_VERSION": "13.0.3", "VLLM_ENABLE_CUDA_COMPATIBILITY": "0"}


def test_a_new_enough_driver_just_runs():
    check = driver.preflight("580.95.05", VLLM_029)
    assert check.refuse is None and check.env == {} and "runs CUDA 13.0.3" in check.note


@pytest.mark.parametrize("old", ["570.172.08", "535.261.03"])
def test_an_older_data_centre_branch_gets_forward_compatibility(old):
    check = driver.preflight(old, VLLM_029)
    assert check.refuse is None and check.env == {"VLLM_ENABLE_CUDA_COMPATIBILITY": "1"}
    assert "forward compatibility" in check.note and "580.65.06" in check.note


def test_a_branch_forward_compatibility_does_not_cover_is_refused_with_the_reason():
    check = driver.preflight("550.163.01", VLLM_029)
    assert check.refuse and "550.163.01" in check.refuse and "does not cover R550" in check.refuse
    assert "R535, R570" in check.refuse and "580.65.06 or newer" in check.hint


def test_an_image_without_the_switch_is_refused_on_an_old_driver():
    check = driver.preflight("570.172.08", {"CUDA_VERSION": "13.0.3"})
    assert check.refuse and "no VLLM_ENABLE_CUDA_COMPATIBILITY switch" in check.refuse


def test_an_image_that_switches_it_on_itself_needs_nothing_more():
    check = driver.preflight("570.172.08", {**VLLM_029, "VLLM_ENABLE_CUDA_COMPATIBILITY": "1"})
    assert check.refuse is None and check.env == {}


def test_what_cannot_be_read_is_said_and_not_refused():
    unknown = driver.preflight(None, VLLM_029)
    assert unknown.refuse is None and "could not be read" in (unknown.warning or "")
    no_cuda = driver.preflight("470.256.02", {})  # the stand-in images: no CUDA at all
    assert no_cuda.refuse is None and no_cuda.warning is None and "no CUDA_VERSION" in no_cuda.note


def test_cuda_12_images_run_on_r525_and_newer():
    assert driver.preflight("525.60.13", {"CUDA_VERSION": "12.9.1"}).refuse is None
    assert driver.preflight("520.61.05", {"CUDA_VERSION": "12.9.1"}).refuse


def test_the_host_driver_is_read_from_nvidia_smi_then_the_container_cli(tmp_path, monkeypatch):
    """Stand-in executables printing what the real tools print; the first that answers wins."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    monkeypatch.setenv("PATH", str(bin_))
    assert driver.host_driver() is None  # neither tool on the PATH
    cli = bin_ / "nvidia-container-cli"
    cli.write_text("#!/bin/sh\nprintf 'NVRM version:   570.172.08\\nCUDA version:   12.8\\n\\nDevice Index: 0\\n'\n")
    cli.chmod(0o755)
    assert driver.host_driver() == "570.172.08"
    smi = bin_ / "nvidia-smi"
    smi.write_text("#!/bin/sh\nprintf '580.95.05\\n580.95.05\\n'\n")
    smi.chmod(0o755)
    assert driver.host_driver() == "580.95.05"
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'"
                   "\nexit 9\n")
    assert driver.host_driver() == "570.172.08"
    assert os.environ["PATH"] == str(bin_)
