package release

import "fmt"

// MaxRecordBytes is the most a record may take in its Secret or ConfigMap: the
// API server's 1 MiB limit on their data.
const MaxRecordBytes = 1 << 20

// RecordTooLargeError reports a release record that would pass MaxRecordBytes.
type RecordTooLargeError struct {
	Name     string
	Revision int
	Size     int // bytes of the encoded record
}

// Error implements error.
func (e *RecordTooLargeError) Error() string {
	return fmt.Sprintf("release record %s.v%d is %d bytes, over the 1 MiB object limit: "+
		"it holds the chart's templates, files and values and the rendered manifest; "+
		"exclude large files with .helmignore or split the chart",
		e.Name, e.Revision, e.Size)
}
