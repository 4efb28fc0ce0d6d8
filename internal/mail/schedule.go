package mail

import (
	"fmt"
	"strings"
	"time"
)

// DefaultDigestTime is NOTICES_DIGEST_TIME's default.
const DefaultDigestTime = "07:00 Australia/Sydney"

// Schedule is the daily digest time: a wall-clock time in a time zone.
type Schedule struct {
	Hour, Minute int
	Loc          *time.Location
}

// ParseSchedule reads "HH:MM Zone/Name" (the zone is an IANA name; "UTC"
// works too). The zone defaults to Australia/Sydney when omitted.
func ParseSchedule(s string) (Schedule, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 || len(fields) > 2 {
		return Schedule{}, fmt.Errorf("%q is not a digest time such as 07:00 Australia/Sydney", s)
	}
	t, err := time.Parse("15:04", fields[0])
	if err != nil {
		return Schedule{}, fmt.Errorf("%q is not a digest time such as 07:00 Australia/Sydney: %q is not HH:MM", s, fields[0])
	}
	zone := "Australia/Sydney"
	if len(fields) == 2 {
		zone = fields[1]
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return Schedule{}, fmt.Errorf("%q is not a digest time such as 07:00 Australia/Sydney: unknown time zone %q", s, zone)
	}
	return Schedule{Hour: t.Hour(), Minute: t.Minute(), Loc: loc}, nil
}

// String is the schedule in ParseSchedule's form.
func (s Schedule) String() string {
	return fmt.Sprintf("%02d:%02d %s", s.Hour, s.Minute, s.Loc)
}

// Latest returns the latest digest time at or before now: the window a
// digest run at now belongs to.
func (s Schedule) Latest(now time.Time) time.Time {
	l := now.In(s.Loc)
	t := time.Date(l.Year(), l.Month(), l.Day(), s.Hour, s.Minute, 0, 0, s.Loc)
	if t.After(now) {
		t = time.Date(l.Year(), l.Month(), l.Day()-1, s.Hour, s.Minute, 0, 0, s.Loc)
	}
	return t
}

// Next returns the first digest time after now.
func (s Schedule) Next(now time.Time) time.Time {
	l := s.Latest(now).In(s.Loc)
	return time.Date(l.Year(), l.Month(), l.Day()+1, s.Hour, s.Minute, 0, 0, s.Loc)
}
