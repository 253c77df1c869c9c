"""In-process event fan-out: :class:`InProcessEventBus` publishes to bounded subscriptions."""

from clarion.adapters.events.fanout import InProcessEventBus, Subscription

__all__ = ["InProcessEventBus", "Subscription"]
