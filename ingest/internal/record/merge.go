package record

import (
	"slices"
	"sort"
)

// Statistics of reads made apart (partial summaries on several machines)
// combine into those of one read of all the inputs.

// MaxErrors is how many positioned errors Read keeps when Options.MaxErrors
// is 0.
const MaxErrors = 20

// MergeStats combines the statistics of reads of different files into
// those one read of all of them would give: counts added; files in name
// order (a read of the same files listed in name order lists them so);
// the first maxErrors errors and ignored values in that file order;
// passed files and notes of a before those of b when a's first file comes
// first. It returns, for each file index of a and of b, its index in the
// merged list. Notes must be ReadNotes: the notes from the totals are
// written again. The result does not share maps with a or b.
func MergeStats(a, b *Stats, maxErrors int) (st *Stats, aFile, bFile []int) {
	if len(b.Files) > 0 && (len(a.Files) == 0 || b.Files[0] < a.Files[0]) {
		m, bf, af := MergeStats(b, a, maxErrors)
		return m, af, bf
	}
	type file struct {
		name string
		side int
		at   int
	}
	var fs []file
	for side, x := range []*Stats{a, b} {
		for i, f := range x.Files {
			fs = append(fs, file{f, side, i})
		}
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].name < fs[j].name })
	st = NewStats(nil)
	aFile, bFile = make([]int, len(a.Files)), make([]int, len(b.Files))
	for i, f := range fs {
		st.Files = append(st.Files, f.name)
		if f.side == 0 {
			aFile[f.at] = i
		} else {
			bFile[f.at] = i
		}
	}
	for _, x := range []*Stats{a, b} {
		for k, v := range x.Formats {
			st.Formats[k] = v
		}
		st.Read += x.Read
		st.Used += x.Used
		st.Skipped += x.Skipped
		st.Filtered += x.Filtered
		st.Ignored += x.Ignored
		addCounts(&st.SkippedByReason, x.SkippedByReason)
		addCounts(&st.FilteredByReason, x.FilteredByReason)
		addCounts(&st.IgnoredByField, x.IgnoredByField)
		st.Passed = append(st.Passed, x.Passed...)
		st.Notes = append(st.Notes, x.ReadNotes()...)
	}
	rank := map[string]int{}
	for i, f := range st.Files {
		if _, ok := rank[f]; !ok {
			rank[f] = i
		}
	}
	st.Errors = firstByFile(a.Errors, b.Errors, rank, maxErrors)
	st.IgnoredExamples = firstByFile(a.IgnoredExamples, b.IgnoredExamples, rank, maxErrors)
	ids := append(slices.Clone(a.filtered.ids), b.filtered.ids...)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	full := a.filtered.full || b.filtered.full
	if len(ids) > maxFilteredIDs {
		ids, full = ids[:maxFilteredIDs], true
	}
	st.filtered = idSet{ids: ids, sorted: true, full: full}
	st.finish()
	return st, aFile, bFile
}

func addCounts(dst *map[string]int64, src map[string]int64) {
	if *dst == nil {
		*dst = map[string]int64{}
	}
	for k, v := range src {
		(*dst)[k] += v
	}
}

// firstByFile is the first max errors of a and b in the order of their
// files (within a file, as they are).
func firstByFile(a, b []*RecordError, rank map[string]int, max int) []*RecordError {
	all := append(slices.Clone(a), b...)
	sort.SliceStable(all, func(i, j int) bool { return rank[all[i].File] < rank[all[j].File] })
	if len(all) > max {
		all = all[:max]
	}
	return all
}
