"""Device.adopt: vkdqs on a device an app made with the plain ``vulkan`` binding.

The whole GPU suite also runs on an adopted device (``make test-adopt``, ``VKDQS_ADOPT=1``);
these tests check what only adoption has: the app's handles survive, its queue is used only
through its callback, and what vkdqs lacks is said in one error.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import vulkan as vk

from vkdqs import Skinner, procedural
from vkdqs.errors import CapabilityError
from vkdqs.gpu.device import Device

from .conftest import validation_available
from .vulkan_app import VulkanApp

pytestmark = pytest.mark.gpu

FEATURES = ("vertexPipelineStoresAndAtomics", "fillModeNonSolid")


@pytest.fixture
def app():
    a = VulkanApp(features=FEATURES)
    yield a
    a.destroy()
    assert not a.messages, "the app's validation messages:\n" + "\n".join(a.messages)


def _app_buffer_round_trip(app: VulkanApp) -> None:
    """The app still owns a working device: it makes and destroys a buffer of its own."""
    info = vk.VkBufferCreateInfo(
        size=256,
        usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
        sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
    )
    buf = vk.vkCreateBuffer(app.device, info, None)
    vk.vkDestroyBuffer(app.device, buf, None)


def test_an_adopted_device_skins_the_same_bits_as_an_owned_one(app):
    mesh = procedural.candy_wrapper()
    pose = procedural.twist_pose(90)
    with Device.adopt(**app.adopt_kwargs()) as adopted:
        assert adopted.adopted
        with Skinner(adopted, mesh, bone_count=2) as skinner:
            got = skinner.skin(pose)
        assert adopted.live_objects() == 0
        assert app.submissions > 0  # every submission went through the app's callback
    with Device(validation=validation_available()) as owned:
        assert not owned.adopted
        with Skinner(owned, mesh, bone_count=2) as skinner:
            want = skinner.skin(pose)
    for g, w in zip(got, want, strict=True):  # positions, normals
        np.testing.assert_array_equal(g, w)


def test_closing_an_adopted_device_leaves_the_apps_handles(app):
    dev = Device.adopt(**app.adopt_kwargs())
    with Skinner(dev, procedural.candy_wrapper(), bone_count=2) as skinner:
        skinner.skin(procedural.twist_pose(30))
    kept = Skinner(dev, procedural.candy_wrapper(), bone_count=2)  # closed by the Device's close
    dev.close()
    assert kept.closed
    _app_buffer_round_trip(app)
    # a second adoption of the same device works: nothing of the first is left on it
    with (
        Device.adopt(**app.adopt_kwargs()) as again,
        Skinner(again, procedural.candy_wrapper(), bone_count=2) as skinner,
    ):
        skinner.skin(procedural.twist_pose(40))
    # the fixture destroys the app's device: the layer would report any vkdqs object left


@pytest.mark.skipif(not validation_available(), reason="needs the validation layer")
def test_the_apps_messenger_sees_what_is_left_on_its_device():
    """What makes the leak checks above able to fail: an object left on the device is
    reported when the app destroys it, to the app's own callback although vkdqs's messenger
    was made after it (the binding keeps one Python callback per process: vkdqs passes the
    app's messages on)."""
    a = VulkanApp(features=FEATURES)
    with Device.adopt(**a.adopt_kwargs()) as dev:
        assert dev.validation  # vkdqs's messenger, its callback installed after the app's
    info = vk.VkBufferCreateInfo(
        size=256,
        usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
        sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
    )
    vk.vkCreateBuffer(a.device, info, None)  # never destroyed
    logging.getLogger("vulkan_app.validation").disabled = True  # expected here
    try:
        a.destroy()
    finally:
        logging.getLogger("vulkan_app.validation").disabled = False
    assert any("VkBuffer" in m for m in a.messages), a.messages


def test_without_a_submit_callback_vkdqs_never_submits(app):
    kwargs = app.adopt_kwargs()
    kwargs["submit"] = None
    with Device.adopt(**kwargs) as dev:
        with pytest.raises(CapabilityError, match="without a submit callback"):
            with Skinner(dev, procedural.candy_wrapper(), bone_count=2) as skinner:
                skinner.skin(procedural.twist_pose(30))
    assert app.submissions == 0


def test_what_the_device_lacks_is_one_error(app):
    kwargs = app.adopt_kwargs()
    kwargs.update(device=None, queue_family_index=99)
    with pytest.raises(CapabilityError) as err:
        Device.adopt(**kwargs)
    message = str(err.value)
    assert "device is None" in message
    assert "queue_family_index 99 is not one of" in message


def test_a_physical_device_of_another_instance_is_refused(app):
    other = VulkanApp(validation=False)
    try:
        kwargs = app.adopt_kwargs()
        kwargs["physical_device"] = other.physical_device
        with pytest.raises(CapabilityError, match="not one of instance's physical devices"):
            Device.adopt(**kwargs)
    finally:
        other.destroy()


def test_features_the_app_did_not_enable_are_not_used():
    a = VulkanApp(features=())
    try:
        with Device.adopt(**a.adopt_kwargs()) as dev:
            assert not dev.info.vertex_pipeline_stores_and_atomics
            assert not dev.info.fill_mode_non_solid
            with pytest.raises(CapabilityError, match="vertexPipelineStoresAndAtomics"):
                Skinner(dev, procedural.candy_wrapper(), bone_count=2, path="vertex")
    finally:
        a.destroy()
    assert not a.messages


def test_validation_needs_the_apps_debug_utils():
    a = VulkanApp(validation=False)
    try:
        kwargs = a.adopt_kwargs()
        kwargs["validation"] = True
        with pytest.raises(CapabilityError, match="VK_EXT_debug_utils"):
            Device.adopt(**kwargs)
    finally:
        a.destroy()


def test_a_handed_over_device_is_destroyed_with_the_adopted_one():
    a = VulkanApp(features=FEATURES)
    dev = Device.adopt(**a.adopt_kwargs(hand_over=True))
    Skinner(dev, procedural.candy_wrapper(), bone_count=2).skin(procedural.twist_pose(20))
    dev.close()
    assert a.device is None  # on_close ran after vkdqs's objects were gone
    assert not a.messages
