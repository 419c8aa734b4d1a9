"""An independent reader of sparkles' pprof export: Python's protobuf package, with the
messages of google/pprof's proto/profile.proto declared from its field numbers (no
protoc here). Prints the total of each sample value and the top 5 functions by the
second value (self weight), one `name value` line each, for the test to compare.

Usage: python3 read_pprof.py FILE.pb.gz"""
import gzip
import sys
from collections import Counter

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto


def message(fd, name, fields):
    m = fd.message_type.add(name=name)
    for fname, number, kind, label, type_name in fields:
        f = m.field.add(name=fname, number=number, type=kind, label=label)
        if type_name:
            f.type_name = type_name


fd = descriptor_pb2.FileDescriptorProto(name="profile.proto", package="perftools.profiles")
OPT, REP = F.LABEL_OPTIONAL, F.LABEL_REPEATED
message(fd, "ValueType", [("type", 1, F.TYPE_INT64, OPT, None), ("unit", 2, F.TYPE_INT64, OPT, None)])
message(fd, "Sample", [("location_id", 1, F.TYPE_UINT64, REP, None), ("value", 2, F.TYPE_INT64, REP, None)])
message(fd, "Line", [("function_id", 1, F.TYPE_UINT64, OPT, None), ("line", 2, F.TYPE_INT64, OPT, None)])
message(fd, "Location", [("id", 1, F.TYPE_UINT64, OPT, None), ("mapping_id", 2, F.TYPE_UINT64, OPT, None),
                         ("address", 3, F.TYPE_UINT64, OPT, None),
                         ("line", 4, F.TYPE_MESSAGE, REP, ".perftools.profiles.Line")])
message(fd, "Function", [("id", 1, F.TYPE_UINT64, OPT, None), ("name", 2, F.TYPE_INT64, OPT, None),
                         ("system_name", 3, F.TYPE_INT64, OPT, None), ("filename", 4, F.TYPE_INT64, OPT, None)])
message(fd, "Profile", [
    ("sample_type", 1, F.TYPE_MESSAGE, REP, ".perftools.profiles.ValueType"),
    ("sample", 2, F.TYPE_MESSAGE, REP, ".perftools.profiles.Sample"),
    ("location", 4, F.TYPE_MESSAGE, REP, ".perftools.profiles.Location"),
    ("function", 5, F.TYPE_MESSAGE, REP, ".perftools.profiles.Function"),
    ("string_table", 6, F.TYPE_STRING, REP, None),
    ("period_type", 11, F.TYPE_MESSAGE, OPT, ".perftools.profiles.ValueType"),
    ("comment", 13, F.TYPE_INT64, REP, None),
])
pool = descriptor_pool.DescriptorPool()
pool.Add(fd)
Profile = message_factory.GetMessageClass(pool.FindMessageTypeByName("perftools.profiles.Profile"))

p = Profile()
p.ParseFromString(gzip.open(sys.argv[1]).read())
s = p.string_table
assert s[0] == "", "string_table[0] must be empty"
print("types", " ".join(f"{s[t.type]}/{s[t.unit]}" for t in p.sample_type))
for i in range(len(p.sample_type)):
    print("total", i, sum(x.value[i] for x in p.sample))
functions = {f.id: s[f.name] for f in p.function}
locations = {l.id: functions[l.line[0].function_id] for l in p.location}
self_weight = Counter()
for x in p.sample:
    self_weight[locations[x.location_id[0]]] += x.value[1]
for name, value in self_weight.most_common(5):
    print("self", value, name)
