// Package mcpservice serves the MCP tools (node/mcptools) from a
// memory.Service in this process, every call made as one caller:
//
//	srv := mcptools.NewServer(mcpservice.New(svc, memapi.Caller{Principal: p}), opts)
//
// It lives apart from mcptools so the tools, which also run over the HTTP
// client (mcptools.ClientBackend), never link the Service and its Badger
// store; the node's /mcp handler and `mnemo mcp` wire it in. Backend has
// every method of mcptools.Backend, so both offer every tool; a feature
// the Service was opened without (surgery, capsules, duplicate detection)
// answers its tools with memapi.ErrNotFound naming it, and
// mem_build_context leaves the capsule section out.
package mcpservice
