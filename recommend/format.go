package recommend

// minReqsPerWorker is the fewest requests worth a goroutine of their own
// in a walk over the requests' trees (as in analyze's critical paths).
const minReqsPerWorker = 128
