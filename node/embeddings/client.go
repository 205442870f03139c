package embeddings

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// MaxAnswerBytes bounds the answer body read from the endpoint.
const MaxAnswerBytes = 64 << 20

// ErrEndpoint wraps every failure of the embeddings endpoint.
var ErrEndpoint = errors.New("embeddings endpoint")

// Client calls an OpenAI-compatible embeddings endpoint. Its fields are
// read, never written, by Embed, so one Client is safe for concurrent use.
type Client struct {
	BaseURL string       // without the trailing /embeddings, e.g. http://127.0.0.1:11434/v1
	Model   string       // the "model" of every request
	APIKey  string       // sent as "Authorization: Bearer KEY"; "" sends none
	HTTP    *http.Client // nil: http.DefaultClient (no timeout: set one)
}

// Embed returns one vector per text, in order. It blocks for one HTTP
// round trip, bounded by ctx and the HTTP client's timeout. Errors wrap
// ErrEndpoint.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float64, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	url := strings.TrimRight(c.BaseURL, "/") + "/embeddings"
	body, err := json.Marshal(map[string]any{"model": c.Model, "input": texts})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEndpoint, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: POST %s: %v", ErrEndpoint, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes))
	if err != nil {
		return nil, fmt.Errorf("%w: POST %s: reading the answer: %v", ErrEndpoint, url, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%w: POST %s answered %s: %s", ErrEndpoint, url, resp.Status, excerpt(string(raw), 200))
	}
	return decode(raw, len(texts), url)
}

// decode checks an answer for n inputs and orders its vectors.
func decode(raw []byte, n int, url string) ([][]float64, error) {
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%w: POST %s: the answer is not an embeddings response: %v", ErrEndpoint, url, err)
	}
	if len(out.Data) != n {
		return nil, fmt.Errorf("%w: POST %s: %d embeddings for %d inputs", ErrEndpoint, url, len(out.Data), n)
	}
	vecs := make([][]float64, n)
	dim := -1
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= n || vecs[d.Index] != nil {
			return nil, fmt.Errorf("%w: POST %s: bad or repeated index %d", ErrEndpoint, url, d.Index)
		}
		if len(d.Embedding) == 0 || dim >= 0 && len(d.Embedding) != dim {
			return nil, fmt.Errorf("%w: POST %s: embedding %d has %d dimensions", ErrEndpoint, url, d.Index, len(d.Embedding))
		}
		dim = len(d.Embedding)
		vecs[d.Index] = d.Embedding
	}
	return vecs, nil
}

// excerpt is s on one line (runs of white space as one space), cut to n
// runes with "…".
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return strings.TrimSpace(string([]rune(s)[:n])) + "…"
}
