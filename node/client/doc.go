// Package client talks to a running node's HTTP JSON API (package httpapi).
//
//	c, err := client.New("http://127.0.0.1:7070", token)
//	res, err := c.Save(ctx, memapi.SaveRequest{Type: "decision", Content: "…"})
//
// Typed methods mirror the routes one to one and decode the answers into
// package memapi's types. Raw performs any request and returns the body as
// the node sent it, for callers that print the API's own JSON.
//
// An answer with an error status becomes an *Error carrying the status, the
// API's code and its message. *Error unwraps to the matching sentinel of
// package memapi (invalid_request → memapi.ErrInvalid, not_found →
// memapi.ErrNotFound, conflict → memapi.ErrConflict, too_large →
// memapi.ErrTooLarge) or acl.ErrDenied (permission_denied), so
// errors.Is works the same against a local Service and a remote one.
// Failing to reach the node at all wraps ErrUnreachable.
package client
