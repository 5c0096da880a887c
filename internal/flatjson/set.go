package flatjson

import "strconv"

// The setters store a value of kind k into a field of the type json.Unmarshal
// would, and report false where json.Unmarshal would fail. null leaves the
// field as it is, as json.Unmarshal does.

// SetString sets *p to a String.
func SetString(p *string, k Kind, v []byte) bool {
	switch k {
	case String:
		*p = string(v)
	case Null:
	default:
		return false
	}
	return true
}

// SetInt sets *p to a Number that is an int.
func SetInt(p *int, k Kind, v []byte) bool {
	if k == Null {
		return true
	}
	n, err := strconv.Atoi(string(v))
	if k != Number || err != nil {
		return false
	}
	*p = n
	return true
}

// SetInt64 sets *p to a Number that is an int64.
func SetInt64(p *int64, k Kind, v []byte) bool {
	if k == Null {
		return true
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if k != Number || err != nil {
		return false
	}
	*p = n
	return true
}

// SetUint64 sets *p to a Number that is a uint64.
func SetUint64(p *uint64, k Kind, v []byte) bool {
	if k == Null {
		return true
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	if k != Number || err != nil {
		return false
	}
	*p = n
	return true
}

// SetFloat sets *p to a Number.
func SetFloat(p *float64, k Kind, v []byte) bool {
	if k == Null {
		return true
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if k != Number || err != nil {
		return false
	}
	*p = f
	return true
}

// SetBool sets *p to true or false.
func SetBool(p *bool, k Kind) bool {
	switch k {
	case True, False:
		*p = k == True
	case Null:
	default:
		return false
	}
	return true
}
