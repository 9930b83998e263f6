"""Ctrl-C during a long C++ call.

The analysis runs with the GIL released, but Python only delivers KeyboardInterrupt to the main
thread between bytecodes: a 30 s call would hold it until it returns. The call runs on a worker
thread instead while the main thread waits in short slices, so the interrupt is raised at once;
the caller's `on_interrupt` (a CancelToken's `cancel`) tells the C++ readers to stop at their
next progress report, and whatever the worker still returns is dropped.
"""
import threading as _threading

_SLICE_S = 0.1


def call_interruptibly(fn, *args, on_interrupt=None, **kwargs):
    if _threading.current_thread() is not _threading.main_thread():
        # Only the main thread receives signals: elsewhere waiting in slices gains nothing.
        return fn(*args, **kwargs)
    box = {}

    def run():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # handed to the caller's thread below
            box["error"] = e

    worker = _threading.Thread(target=run, name="stepscope-analysis", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(_SLICE_S)
    except BaseException:
        if on_interrupt is not None:
            on_interrupt()
        raise
    if "error" in box:
        error = box.pop("error")
        try:
            raise error
        finally:
            del error
    return box["value"]
