package httpapi

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	rtpprof "runtime/pprof"
)

// debugProfiles are the runtime profiles GET /debug/pprof/{profile} serves,
// each as runtime/pprof writes it (?debug=1 for text); "profile" is a CPU
// profile of ?seconds= (default 30) and "trace" an execution trace.
var debugProfiles = []string{"heap", "allocs", "goroutine", "mutex", "block", "threadcreate", "profile", "trace"}

// debugProfile serves the Go runtime's profiles of this node process to
// the owner only: a heap profile shows every memory's text the node
// holds in passing, so no other token may read one.
func (a *api) debugProfile(w http.ResponseWriter, r *http.Request) error {
	if err := a.requireOwner(r, "read the process's profiles"); err != nil {
		return err
	}
	name := r.PathValue("profile")
	switch {
	case name == "profile":
		pprof.Profile(w, r)
	case name == "trace":
		pprof.Trace(w, r)
	case contains(debugProfiles, name) && rtpprof.Lookup(name) != nil:
		pprof.Handler(name).ServeHTTP(w, r)
	default:
		return &apiError{http.StatusNotFound, "not_found",
			fmt.Sprintf("no profile %q (there are: %v)", name, debugProfiles)}
	}
	return nil
}
