package ingest

// units checks the units of times and durations (filled in below).
type units struct{}

func (u *units) notes() []string { return nil }
