"""Rebuild schemas/ua-1.0.json from resources/ua/schema_facts.json."""

from studio.core.ua import build_ua_schema
from studio.resources import schemas_dir, ua_data_dir

if __name__ == "__main__":
    s = build_ua_schema(ua_data_dir() / "schema_facts.json", schemas_dir() / "ua-1.0.json")
    print(f"wrote {schemas_dir() / 'ua-1.0.json'}: {len(s.concepts)} concepts")
