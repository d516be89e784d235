"""Bedrock Converse in tests: native message builders and a real boto3 client that talks to the
strict provider server (no AWS: dummy keys, the server's loopback URL)."""

from __future__ import annotations

from typing import Any

from toolmend.testing import StrictProviderServer


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def converse_client(server: StrictProviderServer) -> Any:
    """A ``bedrock-runtime`` boto3 client for ``server`` (its recorded requests cleared)."""
    import boto3

    server.clear()
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=server.base_url,
        aws_access_key_id="AKIDTOOLMEND",
        aws_secret_access_key="toolmend-secret",
    )
