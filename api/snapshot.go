package api

// Headers of the answer to GET /v1/snapshot, whose body is a backup file
// (application/octet-stream) rather than JSON.
const (
	// HeaderSnapshotSHA256 carries the file's SHA-256 checksum in hex:
	// the same checksum that ends the file, so that a client can check
	// what it received without parsing it.
	HeaderSnapshotSHA256 = "X-Lockd-Snapshot-Sha256"
	// HeaderSnapshotIndex carries the Raft index of the last entry the
	// snapshot holds: no fencing token in it is higher.
	HeaderSnapshotIndex = "X-Lockd-Snapshot-Index"
)
