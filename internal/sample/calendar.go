package sample

// Civil-date arithmetic on day numbers (days since 1970-01-01), so that the
// hot loops format dates without the time package.

// dayOf returns the day number of a proleptic Gregorian date.
func dayOf(y, m, d int) int32 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int32(era*146097 + doe - 719468)
}

// civil returns the date of a day number.
func civil(day int32) (y, m, d int) {
	z := int(day) + 719468
	era := z
	if era < 0 {
		era -= 146096
	}
	era /= 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// weekday returns 0 for Sunday .. 6 for Saturday.
func weekday(day int32) int {
	w := (int(day) + 4) % 7
	if w < 0 {
		w += 7
	}
	return w
}

func append2(b []byte, v int) []byte {
	return append(b, byte('0'+v/10%10), byte('0'+v%10))
}

func append4(b []byte, v int) []byte {
	return append(b, byte('0'+v/1000%10), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

// appendDMY appends DD/MM/YYYY, the register's date form.
func appendDMY(b []byte, day int32) []byte {
	y, m, d := civil(day)
	b = append2(b, d)
	b = append(b, '/')
	b = append2(b, m)
	b = append(b, '/')
	return append4(b, y)
}

// appendLongDate appends "2 March 2026", the form notices use.
func appendLongDate(b []byte, day int32) []byte {
	y, m, d := civil(day)
	if d >= 10 {
		b = append(b, byte('0'+d/10))
	}
	b = append(b, byte('0'+d%10), ' ')
	b = append(b, monthNames[m-1]...)
	b = append(b, ' ')
	return append4(b, y)
}

// appendTimestamp appends unix seconds as RFC 3339 UTC with a Z and no
// fraction: 2026-03-02T23:14:05Z.
func appendTimestamp(b []byte, unix int64) []byte {
	day := int32(unix / 86400)
	sec := int(unix % 86400)
	if sec < 0 {
		sec += 86400
		day--
	}
	y, m, d := civil(day)
	b = append4(b, y)
	b = append(b, '-')
	b = append2(b, m)
	b = append(b, '-')
	b = append2(b, d)
	b = append(b, 'T')
	b = append2(b, sec/3600)
	b = append(b, ':')
	b = append2(b, sec/60%60)
	b = append(b, ':')
	b = append2(b, sec%60)
	return append(b, 'Z')
}
