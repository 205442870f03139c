package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/node/memapi"
)

// ErrUnreachable is wrapped when no HTTP answer came back at all.
var ErrUnreachable = errors.New("client: node unreachable")

// maxAnswer caps how much of an answer the client reads (an export can be
// large, but not unbounded).
const maxAnswer = 256 << 20

// Error is an error answer from the node.
type Error struct {
	Status  int    // HTTP status
	Code    string // e.g. "not_found"
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("node answered %d %s", e.Status, e.Code)
	}
	return e.Message
}

// Unwrap maps the API's code to the sentinel a local Service would return.
func (e *Error) Unwrap() error {
	switch e.Code {
	case "invalid_request":
		return memapi.ErrInvalid
	case "not_found":
		return memapi.ErrNotFound
	case "conflict":
		return memapi.ErrConflict
	case "too_large":
		return memapi.ErrTooLarge
	case "permission_denied":
		return acl.ErrDenied
	}
	return nil
}

// Client calls one node. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	token   string
	hc      *http.Client
	session string // X-Mnemo-Session; see WithSession
}

// New returns a Client for the node at baseURL (e.g. http://127.0.0.1:7070)
// authenticating with token.
func New(baseURL, token string) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: node URL %q: want http://host:port", baseURL)
	}
	return &Client{base: u, token: token, hc: &http.Client{Timeout: 5 * time.Minute}}, nil
}

// URL is the node's base URL.
func (c *Client) URL() string { return c.base.String() }

// Raw sends one request and returns the answer's body as sent. body may be
// nil; a non-nil body is sent as application/json. An error status is an
// *Error (the body is still returned).
func (c *Client) Raw(ctx context.Context, method, path string, query url.Values, body io.Reader) ([]byte, error) {
	u := *c.base
	u.Path += path
	if len(query) > 0 {
		u.RawQuery = query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.session != "" {
		req.Header.Set(SessionHeader, c.session)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot reach the node at %s (is `mnemo node` running?): %v", ErrUnreachable, c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("client: reading the answer to %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		e := &Error{Status: resp.StatusCode, Code: http.StatusText(resp.StatusCode)}
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
			e.Code, e.Message = eb.Error.Code, eb.Error.Message
		} else {
			e.Message = fmt.Sprintf("node answered %s: %s", resp.Status, strings.TrimSpace(string(data)))
		}
		return data, e
	}
	return data, nil
}

// call sends in as JSON (if non-nil) and decodes the answer into out (if non-nil).
func (c *Client) call(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		body = bytes.NewReader(b)
	}
	data, err := c.Raw(ctx, method, path, query, body)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("client: decoding the answer to %s %s: %w", method, path, err)
	}
	return nil
}

// Health checks GET /healthz.
func (c *Client) Health(ctx context.Context) error {
	return c.call(ctx, "GET", "/healthz", nil, nil, nil)
}

// Save creates (or, by topic key, upserts) a memory.
func (c *Client) Save(ctx context.Context, req memapi.SaveRequest) (memapi.SaveResult, error) {
	var out memapi.SaveResult
	err := c.call(ctx, "POST", "/v1/memories", nil, req, &out)
	return out, err
}

// Get reads one memory.
func (c *Client) Get(ctx context.Context, id string, includeDeleted bool) (memapi.Memory, error) {
	var out memapi.Memory
	err := c.call(ctx, "GET", "/v1/memories/"+url.PathEscape(id), GetQuery(includeDeleted), nil, &out)
	return out, err
}

// GetQuery is the query of a Get.
func GetQuery(includeDeleted bool) url.Values {
	q := url.Values{}
	if includeDeleted {
		q.Set("include_deleted", "true")
	}
	return q
}

// Update changes the given fields of a memory.
func (c *Client) Update(ctx context.Context, id string, req memapi.UpdateRequest) (memapi.Memory, error) {
	var out memapi.Memory
	err := c.call(ctx, "PATCH", "/v1/memories/"+url.PathEscape(id), nil, req, &out)
	return out, err
}

// Delete soft-deletes a memory; hard retracts it.
func (c *Client) Delete(ctx context.Context, id string, hard bool) error {
	q := url.Values{}
	if hard {
		q.Set("hard", "true")
	}
	return c.call(ctx, "DELETE", "/v1/memories/"+url.PathEscape(id), q, nil, nil)
}

// Search runs a ranked query.
func (c *Client) Search(ctx context.Context, q memapi.SearchQuery) (memapi.SearchResult, error) {
	var out memapi.SearchResult
	err := c.call(ctx, "GET", "/v1/search", SearchValues(q), nil, &out)
	return out, err
}

// Timeline reads the memories around one.
func (c *Client) Timeline(ctx context.Context, q memapi.TimelineQuery) (memapi.Timeline, error) {
	var out memapi.Timeline
	err := c.call(ctx, "GET", "/v1/timeline", TimelineValues(q), nil, &out)
	return out, err
}

// Context builds prompt-ready context.
func (c *Client) Context(ctx context.Context, q memapi.ContextQuery) (memapi.ContextResult, error) {
	var out memapi.ContextResult
	err := c.call(ctx, "GET", "/v1/context", ContextValues(q), nil, &out)
	return out, err
}

// Compact identifies stale memories or compacts the given ids.
func (c *Client) Compact(ctx context.Context, req memapi.CompactRequest) (memapi.CompactResult, error) {
	var out memapi.CompactResult
	err := c.call(ctx, "POST", "/v1/compact", nil, req, &out)
	return out, err
}

// Stats summarises a namespace ("" = everything readable).
func (c *Client) Stats(ctx context.Context, ns string) (memapi.Stats, error) {
	var out memapi.Stats
	err := c.call(ctx, "GET", "/v1/stats", NamespaceValues(ns), nil, &out)
	return out, err
}

// Export reads everything readable under ns.
func (c *Client) Export(ctx context.Context, ns string) (memapi.Export, error) {
	var out memapi.Export
	err := c.call(ctx, "GET", "/v1/export", NamespaceValues(ns), nil, &out)
	return out, err
}

// Import sends a mnemo or engram export.
func (c *Client) Import(ctx context.Context, data []byte, opts memapi.ImportOptions) (memapi.ImportResult, error) {
	var out memapi.ImportResult
	q := NamespaceValues(opts.Namespace)
	if opts.PreserveProvenance {
		q.Set("preserve_provenance", "true")
	}
	raw, err := c.Raw(ctx, "POST", "/v1/import", q, bytes.NewReader(data))
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, fmt.Errorf("client: decoding the answer to POST /v1/import: %w", err)
	}
	return out, nil
}

// StartSession opens a session (idempotent by id).
func (c *Client) StartSession(ctx context.Context, req memapi.SessionStart) (memapi.Session, error) {
	var out memapi.Session
	err := c.call(ctx, "POST", "/v1/sessions", nil, req, &out)
	return out, err
}

// EndSession closes a session.
func (c *Client) EndSession(ctx context.Context, req memapi.SessionEnd) (memapi.Session, error) {
	var out memapi.Session
	body := struct {
		Summary string `json:"summary,omitempty"`
	}{req.Summary}
	err := c.call(ctx, "POST", "/v1/sessions/"+url.PathEscape(req.ID)+"/end", nil, body, &out)
	return out, err
}

// SessionSummary saves an end-of-session summary.
func (c *Client) SessionSummary(ctx context.Context, req memapi.SessionSummaryRequest) (memapi.SaveResult, error) {
	var out memapi.SaveResult
	err := c.call(ctx, "POST", "/v1/sessions/"+url.PathEscape(req.SessionID)+"/summary", nil, req, &out)
	return out, err
}

// SavePrompt saves a user prompt.
func (c *Client) SavePrompt(ctx context.Context, req memapi.PromptRequest) (memapi.SaveResult, error) {
	var out memapi.SaveResult
	err := c.call(ctx, "POST", "/v1/prompts", nil, req, &out)
	return out, err
}

// Progress upserts a project's progress note.
func (c *Client) Progress(ctx context.Context, req memapi.ProgressRequest) (memapi.SaveResult, error) {
	var out memapi.SaveResult
	err := c.call(ctx, "POST", "/v1/progress", nil, req, &out)
	return out, err
}

// NamespaceValues is ?namespace=ns, or nothing for "".
func NamespaceValues(ns string) url.Values {
	q := url.Values{}
	setStr(q, "namespace", ns)
	return q
}

// FilterValues encodes a Filter as query parameters.
func FilterValues(f memapi.Filter) url.Values {
	q := url.Values{}
	setStr(q, "namespace", f.Namespace)
	setStr(q, "type", f.Type)
	setStr(q, "tags", strings.Join(f.Tags, ","))
	setStr(q, "project", f.Project)
	setStr(q, "scope", f.Scope)
	setStr(q, "subject_type", f.SubjectType)
	setStr(q, "subject_id", f.SubjectID)
	setStr(q, "session_id", f.SessionID)
	setStr(q, "channel", f.Channel)
	if f.IncludeQuarantined {
		q.Set("include_quarantined", "true")
	}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		q.Set("until", f.Until.Format(time.RFC3339Nano))
	}
	return q
}

// SearchValues encodes a SearchQuery.
func SearchValues(s memapi.SearchQuery) url.Values {
	q := FilterValues(s.Filter)
	setStr(q, "q", s.Query)
	setInt(q, "limit", s.Limit)
	if s.IncludeDeleted {
		q.Set("include_deleted", "true")
	}
	if s.Feedback {
		q.Set("feedback", "true")
	}
	return q
}

// TimelineValues encodes a TimelineQuery.
func TimelineValues(t memapi.TimelineQuery) url.Values {
	q := FilterValues(t.Filter)
	q.Set("id", t.ID)
	setInt(q, "before", t.Before)
	setInt(q, "after", t.After)
	return q
}

// ContextValues encodes a ContextQuery.
func ContextValues(c memapi.ContextQuery) url.Values {
	q := FilterValues(c.Filter)
	setInt(q, "max_tokens", c.MaxTokens)
	return q
}

func setStr(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

func setInt(q url.Values, k string, v int) {
	if v != 0 {
		q.Set(k, strconv.Itoa(v))
	}
}
