# Shared by the runtime blocks: cmake/EmbedRuntime.cmake puts the lines below (after this
# header) in place of each line `# graphmend-shared: skip_frames VAR=START` of a block, at that
# line's indentation, with @VAR@ and @START@ replaced (tests/python/conftest.py does the same).
# START is a list of code objects: they and every code object nested in them are never
# compiled by Dynamo as frames of their own. VAR names the list as it is worked off.
try:
    from torch._C._dynamo import eval_frame as ef

    strategy = ef._FrameExecStrategy(ef._FrameAction.SKIP, ef._FrameAction.SKIP)
    @VAR@ = @START@
    while @VAR@:
        code = @VAR@.pop()
        ef.set_code_exec_strategy(code, strategy)
        @VAR@.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
except Exception:  # another torch: frames are compiled as before
    pass
