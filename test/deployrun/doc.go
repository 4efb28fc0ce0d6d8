// Package deployrun runs compose.yaml for real on a Docker engine: `make
// test-deploy` (scripts/test-deploy.sh) starts a dockerd of its own, makes
// the base images locally, builds noticesd:local and then runs these tests
// with DOCKER_HOST pointing at that engine. They need that setup, hence the
// build tag: `go test ./...` does not build them.
//
// The stack runs through compose.hostnet.yaml (every service on the host
// network, on free loopback ports) and must: finish init, turn api and both
// workers healthy, answer the README's tour, deliver a webhook from a worker
// container to a receiver here, keep accounts, watches, notices and
// deliveries across `down` and `up` (volumes), and lose no delivery when a
// worker container is killed in the middle of one.
//
// Run: make test-deploy. The tests are in files with the deployrun build tag.
package deployrun
