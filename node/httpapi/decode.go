package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mnemohq/mnemo/node/memapi"
)

// decodeJSON reads one JSON value from a capped body into dst, refusing
// unknown fields and trailing data, and strings that are not text
// (memapi.CheckJSONText: bytes that are not UTF-8, which the decoder would
// silently replace, or a NUL), naming the field. An empty body is an error
// unless allowEmpty, in which case dst keeps its zero value.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, dst any, allowEmpty bool) error {
	body, err := readAll(w, r, limit)
	if err != nil {
		return err
	}
	if err := memapi.CheckJSONText(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if errors.Is(err, io.EOF) {
			if allowEmpty {
				return nil
			}
			return badRequest("request body is empty; expected a JSON object")
		}
		return jsonError(err)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return jsonError(err)
		}
		return badRequest("malformed JSON: unexpected data after the JSON object")
	}
	return nil
}

func jsonError(err error) error {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.As(err, &se):
		return badRequest("malformed JSON at byte %d: %v", se.Offset, se)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return badRequest("malformed JSON: expected an object, got %s", te.Value)
		}
		return badRequest("field %q: expected %s, got %s", field, te.Type, te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("malformed JSON: unexpected end of body")
	default:
		// Unknown fields ("json: unknown field \"x\"") and the rest.
		return badRequest("malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
}

// params reads query parameters strictly: unknown names, repeats and values
// that do not parse are errors naming the parameter. The first error sticks;
// check err after reading every value.
type params struct {
	vals url.Values
	err  error
}

var filterParams = []string{"namespace", "type", "tags", "project", "scope", "subject_type",
	"subject_id", "session_id", "channel", "since", "until", "include_quarantined"}

func newParams(r *http.Request, allowed ...string) (*params, error) {
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest("malformed query string: %v", err)
	}
	for name, vs := range vals {
		if !contains(allowed, name) {
			return nil, badRequest("unknown query parameter %q (allowed: %s)", name, strings.Join(allowed, ", "))
		}
		if len(vs) > 1 {
			return nil, badRequest("query parameter %q given %d times", name, len(vs))
		}
		if v := vs[0]; !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return nil, badRequest("query parameter %q is not text (invalid UTF-8 or a NUL byte)", name)
		}
	}
	return &params{vals: vals}, nil
}

func (p *params) fail(format string, args ...any) {
	if p.err == nil {
		p.err = badRequest(format, args...)
	}
}

func (p *params) str(name string) string { return p.vals.Get(name) }

// count parses a non-negative integer; absent is 0.
func (p *params) count(name string) int {
	s := p.vals.Get(name)
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		p.fail("query parameter %q: %q is not an integer", name, s)
		return 0
	}
	if n < 0 {
		p.fail("query parameter %q: must not be negative, got %d", name, n)
		return 0
	}
	return n
}

func (p *params) boolean(name string) bool {
	s := p.vals.Get(name)
	if s == "" {
		return false
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		p.fail("query parameter %q: %q is not true or false", name, s)
	}
	return b
}

func (p *params) time(name string) time.Time {
	s := p.vals.Get(name)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		p.fail("query parameter %q: %q is not an RFC 3339 time (e.g. 2025-01-02T15:04:05Z)", name, s)
	}
	return t
}

// list splits a comma-separated value, dropping empty items.
func (p *params) list(name string) []string {
	return splitList(p.vals.Get(name))
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func (p *params) filter() memapi.Filter {
	f := memapi.Filter{
		Namespace:   p.str("namespace"),
		Type:        p.str("type"),
		Tags:        p.list("tags"),
		Project:     p.str("project"),
		Scope:       p.str("scope"),
		SubjectType: p.str("subject_type"),
		SubjectID:   p.str("subject_id"),
		SessionID:   p.str("session_id"),
		Channel:     p.str("channel"),
		Since:       p.time("since"),
		Until:       p.time("until"),
	}
	f.IncludeQuarantined = p.boolean("include_quarantined")
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		p.fail("query parameters since and until: until (%s) is before since (%s)",
			f.Until.Format(time.RFC3339), f.Since.Format(time.RFC3339))
	}
	return f
}

func with(list []string, more ...string) []string {
	return append(append([]string(nil), list...), more...)
}

// bodyCall is a POST handler whose JSON body is the request of one Service
// method and whose answer, with status code, is that method's result.
func bodyCall[In, Out any](a *api, call func(context.Context, memapi.Caller, In) (Out, error), code int) handlerFunc {
	return bodyCallStatus(a, call, func(Out) int { return code })
}

// bodyCallStatus is bodyCall with the status code chosen from the result.
func bodyCallStatus[In, Out any](a *api, call func(context.Context, memapi.Caller, In) (Out, error), status func(Out) int) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var req In
		if err := decodeJSON(w, r, a.maxBody, &req, false); err != nil {
			return err
		}
		c, err := a.callerFor(r)
		if err != nil {
			return err
		}
		res, err := call(r.Context(), c, req)
		if err != nil {
			return err
		}
		writeJSON(w, status(res), res)
		return nil
	}
}
