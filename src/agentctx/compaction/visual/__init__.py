"""Visual context for screenshot agents (seed 000): three zones and cold storage.

* Active zone: the open turn; windows show every image (downscaled, see
  ``ContextConfig.image_max_width``).
* Compact zone: ended turns; a turn-end job keeps the anchor (first), result (last),
  error and pinned frames and flags every other image, which windows show as
  ``[Visual_Placeholder: img_…]`` (:class:`VisualCompactor`).
* Offloaded zone: the bytes, in the content-addressed blob store, restorable by id
  (``restore_image``, the ``restore_image`` tool, ``build_context(restore_images=…)``)
  until cold-storage retention expires them (:func:`cleanup_cold_storage`).

Near-duplicate screenshots are caught on arrival (:mod:`agentctx.perception`).
"""

from agentctx.compaction.visual.cold import CleanupReport, cleanup_cold_storage
from agentctx.compaction.visual.compactor import (
    VISUAL_JOB,
    ImageFrame,
    TurnHasImages,
    VisualCompaction,
    VisualCompactor,
    turn_has_images,
)
from agentctx.compaction.visual.config import VisualConfig
from agentctx.compaction.visual.frames import (
    KEPT_FRAMES,
    PIN_METADATA_KEY,
    Frame,
    classify_frames,
    is_error_event,
)
from agentctx.compaction.visual.tool import (
    RestoredImage,
    RestoreImageArgs,
    handle_restore_image,
    parse_restore_image_args,
    restore_image_tool,
)

__all__ = [
    "KEPT_FRAMES",
    "PIN_METADATA_KEY",
    "VISUAL_JOB",
    "CleanupReport",
    "Frame",
    "ImageFrame",
    "RestoreImageArgs",
    "RestoredImage",
    "TurnHasImages",
    "VisualCompaction",
    "VisualCompactor",
    "VisualConfig",
    "classify_frames",
    "cleanup_cold_storage",
    "handle_restore_image",
    "is_error_event",
    "parse_restore_image_args",
    "restore_image_tool",
    "turn_has_images",
]
