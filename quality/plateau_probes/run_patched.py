"""python run_patched.py SCRIPT.py [flags]: run a repository runner with preln_patch applied."""
import runpy, sys
sys.path.insert(0, "/tmp/p54h"); sys.path.insert(0, "/work/main")
import preln_patch
preln_patch.apply()
script = sys.argv[1]
sys.argv = [script] + sys.argv[2:]
runpy.run_path(script, run_name="__main__")
