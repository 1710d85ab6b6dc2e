import os


class Settings:
    def __init__(self, debug=False, workers=1):
        self.debug = debug
        self.workers = workers


def load_settings(env=None):
    env = os.environ if env is None else env
    debug = env.get("APP_DEBUG", "false") == "true"
    workers = int(env.get("APP_WORKERS", "1"))
    return Settings(debug=debug, workers=workers)
