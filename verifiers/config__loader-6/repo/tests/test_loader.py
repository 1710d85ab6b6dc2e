from config.loader import load_settings


def test_defaults():
    settings = load_settings({})
    assert settings.debug is False
    assert settings.workers == 1


def test_workers():
    assert load_settings({"APP_WORKERS": "4"}).workers == 4
