package projview

// What the external tests look at inside the feature.

// ViewRecordID is viewRecordID, to find a view record in the store.
var ViewRecordID = viewRecordID

// Maintained is how many projections this node keeps up to date.
func (pv *Projections) Maintained() int { return len(pv.maintained()) }

// ForgetSpecs drops the admitted specs, so changes made afterwards reach
// no view: what a crash between a source write and its view write leaves.
func (pv *Projections) ForgetSpecs() {
	pv.mu.Lock()
	pv.byView = nil
	pv.mu.Unlock()
}
