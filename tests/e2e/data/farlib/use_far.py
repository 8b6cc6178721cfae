import sys

sys.path.insert(0, sys.argv[1])
import farext

v = farext.scale(4)  # the call
print("far", v)
