package memapi

// DuplicateQuery asks for near-duplicate pairs.
type DuplicateQuery struct {
	// Namespace, when set, keeps the pairs with at least one side in it
	// (or its sub-namespaces).
	Namespace string  `json:"namespace,omitempty"`
	Threshold float64 `json:"threshold,omitempty"` // MinHash; default the configured one (0.8)
	Limit     int     `json:"limit,omitempty"`     // default 50, max 500
}

// DuplicateSide is one memory of a pair.
type DuplicateSide struct {
	ID        string `json:"id"`
	Namespace string `json:"namespace"`
	Title     string `json:"title"`
	Author    string `json:"author"`
}

// DuplicatePair is a candidate pair, A's id < B's id.
type DuplicatePair struct {
	A           DuplicateSide `json:"a"`
	B           DuplicateSide `json:"b"`
	Similarity  float64       `json:"similarity"`
	Method      string        `json:"method"`      // minhash or embeddings
	Independent bool          `json:"independent"` // different authors, neither derived from the other
}

// DuplicatesResult lists pairs, most similar first.
type DuplicatesResult struct {
	Pairs    []DuplicatePair `json:"pairs"`
	Compared int             `json:"compared"` // memories compared
	Warning  string          `json:"warning,omitempty"`
}

// MergeRequest merges near-duplicates within a shared namespace.
type MergeRequest struct {
	IDs       []string `json:"ids"`
	Namespace string   `json:"namespace"`
}

// MergeResult is the survivor and what happened to the others.
type MergeResult struct {
	Memory           Memory   `json:"memory"`       // the survivor, after the merge
	Merged           []string `json:"merged"`       // soft-deleted, lineage = the survivor
	Contributors     []string `json:"contributors"` // outside the namespace: provenance only
	Independent      bool     `json:"independent"`  // independent agents agreed: confidence raised
	ConfidenceBefore float64  `json:"confidence_before"`
	ConfidenceAfter  float64  `json:"confidence_after"`
}
