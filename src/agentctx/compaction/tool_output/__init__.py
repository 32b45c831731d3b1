"""Tool-result compression with restorable offloading (seed 002's ToolResultCompressor).

Compression only changes what enters the context window; the stored event never
changes. Three strategies (:func:`truncate_list`, :func:`shorten_json`,
:func:`head_tail`) are registered per tool name or glob on a
:class:`ToolOutputCompressor`; output over the offload threshold goes to the blob
store and the window carries a preview and a pointer
(``[tool_output: out_…, 12,340 tokens, use read_offloaded(out_…)]``) that
``Session.read_offloaded`` and the ``read_offloaded`` tool resolve.
"""

from agentctx.compaction.tool_output.compressor import (
    STRATEGY_NAMES,
    CompressedOutput,
    ToolOutputCompressor,
    ToolOutputConfig,
    default_chain,
    parse_tool_output_config,
)
from agentctx.compaction.tool_output.offload import (
    Offloaded,
    OffloadedPage,
    compress_tool_result_for_window,
    forget_window_texts,
    offload,
    offloaded_id,
    pointer_line,
    read_offloaded_page,
)
from agentctx.compaction.tool_output.strategies import (
    Strategy,
    ToolContent,
    head_tail,
    shorten_json,
    truncate_list,
)
from agentctx.compaction.tool_output.tool import (
    ReadOffloadedArgs,
    handle_read_offloaded,
    parse_read_offloaded_args,
    read_offloaded_tool,
)

__all__ = [
    "STRATEGY_NAMES",
    "CompressedOutput",
    "Offloaded",
    "OffloadedPage",
    "ReadOffloadedArgs",
    "Strategy",
    "ToolContent",
    "ToolOutputCompressor",
    "ToolOutputConfig",
    "compress_tool_result_for_window",
    "forget_window_texts",
    "default_chain",
    "handle_read_offloaded",
    "head_tail",
    "offload",
    "offloaded_id",
    "parse_read_offloaded_args",
    "parse_tool_output_config",
    "pointer_line",
    "read_offloaded_page",
    "read_offloaded_tool",
    "shorten_json",
    "truncate_list",
]
