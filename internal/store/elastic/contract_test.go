package elastic

import (
	"testing"

	"github.com/noticesd/noticesd/internal/store/storetest"
)

func TestNoticesContract(t *testing.T) {
	storetest.RunNotices(t, func(t *testing.T) storetest.Backend {
		clock := storetest.NewClock(storetest.Start)
		s := openTest(t, clock.Now)
		return storetest.Backend{Notices: s, Writer: s, Register: s, Clock: clock}
	})
}
