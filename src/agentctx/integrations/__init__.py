"""Integrations with agent frameworks and tool protocols.

Each lives in a module of its own behind a pip extra, imported only when used:

* ``agentctx.integrations.openai_agents``: ``AgentCtxSession``, an OpenAI Agents SDK
  session kept in agentctx (``pip install "agentctx[agents]"``);
* ``agentctx.integrations.mcp_server``: an MCP server exposing memory search, memory
  writes and image restore as tools (``pip install "agentctx[mcp]"``);
* ``agentctx.integrations.adk``: Google ADK session and memory services kept in
  agentctx, and the context window as the model input (``pip install "agentctx[adk]"``);
* ``agentctx.integrations.langgraph``: a LangGraph store over long-term memory, a
  ``pre_model_hook`` that gives the model agentctx's window, and a LangChain chat
  message history (``pip install "agentctx[langgraph]"``).

``skeleton`` and ``sessions`` hold what the integrations that record messages share.
"""
