"""LangGraph runner: `create_react_agent(ChatOpenAI(...), [tool])`; `ainvoke` / `astream` (messages)."""

from __future__ import annotations

import warnings
from typing import Any

import _harness as h

BUILD_NOTE = "create_react_agent(shared ChatOpenAI, [shared StructuredTool]) (compiles a graph)"


def adapter() -> h.Adapter:
    h.require("langgraph", "langgraph")
    h.require("langchain_openai", "langchain-openai")
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of langchain's
        from langgraph.prebuilt import create_react_agent

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return h.add(a, b)

    def llm(url: str, streaming: bool) -> Any:
        return ChatOpenAI(model="fake-model", base_url=url, api_key="x", streaming=streaming, max_retries=0,
                          timeout=h.TIMEOUT)

    def graph(model: Any, tool_: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return create_react_agent(model, [tool_], prompt=h.SYSTEM_PROMPT)

    def make_agent(url: str, streaming: bool) -> Any:
        return graph(llm(url, streaming), StructuredTool.from_function(add))

    async def run(agent: Any, prompt: str, streaming: bool) -> str:
        inputs = {"messages": [("user", prompt)]}
        if not streaming:
            state = await agent.ainvoke(inputs)
            return str(state["messages"][-1].content)
        last: Any = None
        async for mode, chunk in agent.astream(inputs, stream_mode=["messages", "values"]):
            if mode == "values":
                last = chunk
        return str(last["messages"][-1].content) if last else ""

    def prepare_build(url: str) -> Any:
        return llm(url, False), StructuredTool.from_function(add)

    def build_one(shared: Any) -> Any:
        return graph(*shared)

    return h.Adapter(name="langgraph", package="langgraph", make_agent=make_agent, run=run,
                     prepare_build=prepare_build, build_one=build_one,
                     extra_versions=["langchain-openai", "langchain-core", "openai"],
                     build_note=BUILD_NOTE)


if __name__ == "__main__":
    h.main(adapter)
