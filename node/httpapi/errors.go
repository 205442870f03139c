package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/mnemohq/mnemo/acl"
	"github.com/mnemohq/mnemo/namespace"
	"github.com/mnemohq/mnemo/node/memapi"
)

// apiError is an error the handler itself decided (bad parameter, no
// token, no route); its status and code are exact.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, "invalid_request", fmt.Sprintf(format, args...)}
}

// ErrorBody is the JSON shape of every error answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong: a stable code and a human message.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// classify maps an error to its status and code. The order matters only for
// errors that wrap more than one sentinel; the most specific comes first.
func classify(err error) (status int, code string) {
	var ae *apiError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae.status, ae.code
	case errors.As(err, &mbe), errors.Is(err, memapi.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, "too_large"
	case errors.Is(err, acl.ErrDenied):
		return http.StatusForbidden, "permission_denied"
	case errors.Is(err, memapi.ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, memapi.ErrConflict):
		return http.StatusConflict, "conflict"
	case errors.Is(err, memapi.ErrInvalid), errors.Is(err, namespace.ErrInvalid):
		return http.StatusBadRequest, "invalid_request"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "unavailable"
	default:
		return http.StatusInternalServerError, "internal"
	}
}

func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, code := classify(err)
	msg := err.Error()
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		msg = fmt.Sprintf("request body larger than %d bytes", mbe.Limit)
	case status == http.StatusInternalServerError:
		// The cause may hold paths or internals: log it, answer generically.
		a.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "internal error (see the node's log)"
	case status == http.StatusServiceUnavailable:
		msg = "request cancelled or timed out"
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mnemo"`)
	}
	writeJSON(w, status, ErrorBody{Error: ErrorDetail{Code: code, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v) // the status is sent; a write error means the client left
}

// Idle encoding buffers writeBuffered keeps: at most searchBufsKept,
// each at most maxPooledBuffer (a rare large answer does not stay
// resident), so at most 256 KiB.
const (
	searchBufsKept  = 4
	maxPooledBuffer = 64 << 10
)

// writeBuffered writes v as writeJSON does, the same bytes, but encoded
// into an idle buffer from bufs first, so the response carries its
// Content-Length and goes out in one write rather than in 4 KiB chunks
// (a search's ten memories are about 10 KB).
func writeBuffered(w http.ResponseWriter, bufs chan *bytes.Buffer, status int, v any) {
	var buf *bytes.Buffer
	select {
	case buf = <-bufs:
	default:
		buf = bytes.NewBuffer(make([]byte, 0, 16<<10))
	}
	defer func() {
		if buf.Cap() > maxPooledBuffer {
			return
		}
		buf.Reset()
		select {
		case bufs <- buf:
		default:
		}
	}()
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		// Not for the types searches answer with; writeJSON's encoder
		// fails alike and sends the status with an empty body.
		writeJSON(w, status, v)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes()) // a write error means the client left
}
